"""A GGUF model through llama-cpp-python, as a LangChain chat model.

A thin adapter rather than langchain-community's ChatLlamaCpp: that package is being sunset, and
all the backend needs is llama.cpp's own chat completion, streamed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


class LlamaCppChat(BaseChatModel):
    model_path: str
    temperature: float = 0.0
    max_tokens: int = 512
    n_ctx: int = 4096
    n_threads: int | None = None
    _llama: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "llama-cpp"

    def _client(self):
        if self._llama is None:
            from llama_cpp import Llama

            self._llama = Llama(model_path=self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads, verbose=False)
        return self._llama

    def _complete(self, messages: list[BaseMessage], stop: list[str] | None, stream: bool):
        return self._client().create_chat_completion(
            messages=[{"role": _ROLES.get(m.type, "user"), "content": str(m.content)} for m in messages],
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            stop=stop,
            stream=stream,
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._complete(messages, stop, stream=False)
        text = reply["choices"][0]["message"]["content"] or ""
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for part in self._complete(messages, stop, stream=True):
            text = part["choices"][0]["delta"].get("content") or ""
            if text:
                if run_manager:
                    run_manager.on_llm_new_token(text)
                yield ChatGenerationChunk(message=AIMessageChunk(content=text))

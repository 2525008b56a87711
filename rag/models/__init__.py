"""The models the answer step calls: the verifier, a chat model within its bounds (OpenAI-compatible
or a local GGUF file), and the prompts they read."""

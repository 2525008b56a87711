"""The Streamlit app: the chat (app.py) and the Evaluate page (evaluate.py); presentation only, over rag."""

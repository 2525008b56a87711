"""The Streamlit chat (ui/app.py arrives with the UI issue); presentation only, over rag."""

"""PaperChat's app, `streamlit run ui/app.py`: the pages, each a file of ui/ (chat first)."""

import streamlit as st

st.set_page_config(page_title="PaperChat", page_icon="📄", layout="wide")
st.navigation(
    [
        st.Page("chat.py", title="Chat", icon=":material/chat:", default=True),
        st.Page("library.py", title="Library", icon=":material/library_books:"),
        st.Page("table.py", title="Table", icon=":material/table:"),
        st.Page("map.py", title="Map", icon=":material/scatter_plot:"),
        st.Page("evaluate.py", title="Evaluate", icon=":material/analytics:"),
    ],
    position="top",
).run()

"""PaperChat's app, `streamlit run ui/app.py`: the pages, each a file of ui/ (chat first)."""

import streamlit as st

from ui.common import t

st.set_page_config(page_title="PaperChat", page_icon="📄", layout="wide")
PAGES = [
    st.Page("chat.py", title=t("nav.chat"), icon=":material/chat:", default=True),
    st.Page("library.py", title=t("nav.library"), icon=":material/library_books:"),
    st.Page("table.py", title=t("nav.table"), icon=":material/table:"),
    st.Page("map.py", title=t("nav.map"), icon=":material/scatter_plot:"),
    st.Page("evaluate.py", title=t("nav.evaluate"), icon=":material/analytics:"),
]
page = st.navigation(PAGES, position="top")
# On a phone Streamlit folds the top navigation into the sidebar, behind a small "»", and the
# sidebar stays over the page after a change: there the pages are links above it instead. On a
# screen 768 px wide or more (Streamlit's own breakpoint) the top navigation shows and these hide.
with st.container(horizontal=True, key="phone-pages"):
    for each in PAGES:
        st.page_link(each)
st.html("<style>@media (min-width: 768px) { .st-key-phone-pages { display: none; } }</style>")
page.run()

"""Markdown to safe HTML for the memory inspector, with each block tagged by the lines it came from.

markdown-it-py (already installed: rich depends on it) in CommonMark mode with raw HTML off, so a `<script>`
in a note is shown as text; links keep markdown-it's URL check (no `javascript:`, `vbscript:`, `file:` or
non-image `data:`), and images are shown as their alt text and address, never fetched (the page loads
nothing from outside this machine). Every block element carries `data-lines="first-last"` (1-based,
inclusive) so the page can mark a cited range in place.
"""

from __future__ import annotations

import html
from typing import Any

from markdown_it import MarkdownIt

_BLOCKS_WITHOUT_OPEN = ("fence", "code_block", "hr")


def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])

    def image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        alt = self.renderInlineAsText(token.children or [], options, env)
        src = token.attrGet("src") or ""
        return f'<span class="md-image">[image: {html.escape(alt)}] {html.escape(str(src))}</span>'

    def link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        tokens[idx].attrSet("target", "_blank")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    return md


_MD = _renderer()


def render_markdown(text: str) -> str:
    """Safe HTML of a markdown text; block elements carry `data-lines` (1-based, inclusive)."""
    tokens = _MD.parse(text)
    for token in tokens:
        if token.map and (token.nesting == 1 or token.type in _BLOCKS_WITHOUT_OPEN):
            first, end = token.map
            token.attrSet("data-lines", f"{first + 1}-{max(first + 1, end)}")
    return _MD.renderer.render(tokens, _MD.options, {})

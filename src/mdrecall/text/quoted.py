"""Text a user quotes from someone else: pasted emails, `>` quote blocks, "translate this review: …", "he wrote: …".

Such text is data the user handed over, not what the user says about themselves: a memory captured from it
would let anyone whose review, email or comment gets pasted into a chat write instructions into every later
session. `own_words(message)` keeps the user's own words: it ends the message where an instruction that
introduces someone else's text begins ("translate this review:", "he wrote:", email headers), drops `>`
lines, and puts a line break where a quoted span was, so what is left splits into the user's own sentences.
"""

from __future__ import annotations

import re

# Headers of a pasted email or a reply chain: everything from there on is someone else's.
_EMAIL_RE = re.compile(
    r"(?im)^[ \t]*(?:(?:from|de|von|da|van|от|发件人|差出人)[ \t]*:[ \t]*\S[^\n]*\n(?:[^\n]*\n){0,3}?[ \t]*"
    r"(?:to|subject|sent|date|cc|para|assunto|enviado|asunto|an|betreff|gesendet|à|objet|a|oggetto|aan|onderwerp"
    r"|кому|тема|收件人|主题|宛先|件名)[ \t]*:|-{2,}[ \t]*(?:original message|forwarded message|mensagem original"
    r"|mensaje original|ursprüngliche nachricht|message d'origine)[ \t]*-{2,}|on [^\n]{4,80} wrote:[ \t]*$"
    r"|em [^\n]{4,80} escreveu:[ \t]*$|el [^\n]{4,80} escribió:[ \t]*$|am [^\n]{4,80} schrieb[^\n]{0,40}:[ \t]*$"
    r"|le [^\n]{4,80} a écrit[ \t]*:[ \t]*$)"
)
_QUOTE_LINE_RE = re.compile(r"(?m)^[ \t]*>[^\n]*$")
# "translate this review: …", "summarize the following email:", "here is a comment from the PR: …"
_PROCESS_VERBS = (
    r"translate|summari[sz]e|proofread|rewrite|rephrase|paraphrase|reply to|respond to|polish|shorten|tl;?dr"
    r"|fix (?:the )?(?:grammar|spelling|typos)|traduza|traduz|traduce|traduzca|traduis|traduisez|übersetze|übersetz"
    r"|traduci|vertaal|resuma|résume|résumez|fasse|zusammenfassen|riassumi|corrija|korrigiere|responda|réponds"
    r"|antworte auf|переведи|перевести|ответь на|исправь"
)
_INTRO_VERBS = (
    r"here(?:'s| is| are)|below is|this is|the following is|check|read|look at|review|answer|analy[sz]e|explain"
    r"|fix|correct|improve|edit|classify|aqui está|segue|aquí está|hier ist|voici|ecco"
)
_DOCUMENTS = (
    r"review|email|e-mail|mail|message|comment|post|text|paragraph|letter|reply|tweet|doc|document|article|issue"
    r"|ticket|chat|transcript|readme|page|prompt|instructions|avaliação|mensagem|comentário|texto|reseña|mensaje"
    r"|correo|comentario|bewertung|nachricht|kommentar|avis|message|commentaire|texte|recensione|messaggio"
)
_HANDLE_RE = re.compile(
    rf"(?im)(?:^|(?<=[.!?])\s+)(?:please\s+|pls\s+|can you\s+|could you\s+|por favor\s+|bitte\s+)?"
    rf"(?:(?:{_PROCESS_VERBS})\b[^:：\n]{{0,80}}|(?:{_INTRO_VERBS})\b[^:：\n]{{0,40}}?\b(?:{_DOCUMENTS})\b[^:：\n]{{0,40}})[:：]"
    r"|(?:^|[。！？\n])[^:：\n。]{0,20}?(?:翻译|翻譯|翻訳|번역|总结|總結|要約|요약)[^:：\n]{0,20}[:：]"
)
# "he wrote: …", "my boss said: …", "the README says: …" (not "I said" / "we wrote": those are the user's own)
_SPEECH_VERBS = (
    r"wrote|writes|said|says|posted|posts|commented|replied|asked|told (?:me|us)|escreveu|escreve|disse|diz"
    r"|escribió|escribe|dijo|dice|schrieb|schreibt|sagte|sagt|a écrit|écrit|a dit|dit|ha scritto|scrive|ha detto"
    r"|schreef|zei|написал|написала|сказал|сказала|写道|说|書いた|言った|썼다|말했다"
)
_SPEECH_RE = re.compile(
    rf"(?im)(?:^|(?<=[.!?])\s+)(?P<who>[^.!?:：\n]{{1,60}}?)\s*\b(?:{_SPEECH_VERBS})\b[^:：\n\"“«„']{{0,40}}[:：]"
)
_SELF_WORDS = "i we eu nós nos yo nosotros ich wir je nous io noi ik wij я мы 我 我们 私"
_SELF = frozenset(_SELF_WORDS.split())
# A quoted span of four words or more ("…", “…”, «…», „…“, '…' not inside a word, 「…」)
_QUOTED_SPAN_RE = re.compile(
    r"\"[^\"\n]{1,400}\"|“[^”\n]{1,400}”|«[^»\n]{1,400}»|„[^“\n]{1,400}“|(?<![A-Za-z])'[^'\n]{1,400}'(?![A-Za-z])"
    r"|「[^」\n]{6,400}」"
)


def _drop_quoted_span(m: re.Match[str]) -> str:
    span = m.group(0)
    return "\n" if span.startswith("「") or len(span.split()) >= 4 else span


def _is_self(who: str) -> bool:
    words = who.strip().lower().split()
    return bool(words) and words[-1] in _SELF


def own_words(message: str) -> str:
    """`message` without the text the user quotes from someone else (each quoted part becomes a line break)."""
    if not message:
        return message
    text = message
    email = _EMAIL_RE.search(text)
    if email is not None:
        text = text[: email.start()]
    text = _QUOTE_LINE_RE.sub("\n", text)
    cut = len(text)
    handle = _HANDLE_RE.search(text)
    if handle is not None:
        cut = min(cut, handle.start())
    for speech in _SPEECH_RE.finditer(text):
        if not _is_self(speech.group("who")):
            cut = min(cut, speech.start())
            break
    text = text[:cut]
    return _QUOTED_SPAN_RE.sub(_drop_quoted_span, text)

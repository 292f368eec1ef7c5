"""The escaping of gpuconf's output media, one helper per medium, used by every writer of that medium:

- a YAML comment, a generated file's header, a Markdown comment: single_line (nothing ends the line);
- a POSIX shell word (the platform scripts, the commands REPORT.md and the notes print): shell_word;
- Markdown, REPORT.md and every Markdown a command prints (diff --format markdown, the impact plan's table):
  md_text for free text, md_code for inline code, md_comment inside an HTML comment;
- a terminal or a CI log (stdout and stderr of every command): term_text;
- a path, in any of these: show_path, the single entry point every printed file or folder name goes through.

Values come from files a stranger may write (a pull request's intent, values files, a folder diff --against reads,
an API server's answers): each helper makes sure that what it is given shows as typed in its medium and starts or
ends nothing there (a line, a comment, a code span, an HTML element, a CI log's workflow command).
"""

from __future__ import annotations

import functools
import re
from typing import Any

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    """A character that is not printable as an escape that bash's $'...' reads back as the same character."""
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8 (Python's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def single_line(text: str) -> str:
    """Text that stays on its comment line: every character a YAML reader, an editor or a terminal could take as a
    line break (\\n, \\r, U+0085, U+2028, U+2029, \\v, \\f, ...) or that is not printable (controls, U+FEFF,
    bytes of undecodable file names) is written as an escape such as \\n or \\u2028.

    YAML 1.1 readers (PyYAML, go-yaml v2) end a comment at U+0085, U+2028 and U+2029 too; what follows would be
    read as YAML.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escaped(ch) for ch in text)


_SHELL_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
#: What single quotes keep but shellcheck reads as a slip (SC2016 `$` and backticks, SC1003 a backslash), and the
#: quote itself: such a word is written in bash's $'...'.
_SHELL_SLIPS = re.compile(r"[$`\\']")


def shell_word(text: str) -> str:
    """text as one word of a bash command line that fits on one line and that shellcheck reads as meant: bare when
    it needs no quoting (not with a leading `=`, which shellcheck takes for a botched assignment, SC2283), in single
    quotes when it is printable and holds no quote, backslash, `$` or backtick, otherwise in bash's $'...' with
    escapes (a path with a newline stays one line, and pasting it into bash gives the same path back). The one
    quoting of the platform scripts, the commands in file headers and REPORT.md, and the notes gpuconf prints."""
    if _SHELL_SAFE.fullmatch(text) and not text.startswith("="):
        return text
    if text.isprintable() and not _SHELL_SLIPS.search(text):
        return "'" + text + "'"
    special = {"\\": "\\\\", "'": "\\'"}
    return "$'" + "".join(special.get(ch, ch) if ch.isprintable() else _escaped(ch) for ch in text) + "'"


def md_comment(text: Any) -> str:
    """Text inside an HTML comment on one line: nothing in it ends the line or the comment."""
    return single_line(str(text)).replace("-->", "--&gt;")


#: Every line break a reader may see: what str.splitlines() splits at (\r\n, \n, \r, \v, \f, \x1c-\x1e, U+0085,
#: U+2028, U+2029). Markdown breaks only at \n and \r, but editors and terminals show the others as new lines.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
#: What starts Markdown or HTML inline: HTML's three as entities; Markdown's punctuation (emphasis, code, links and
#: images, strikethrough, GitHub's math, the table's pipe, the escape itself) backslash-escaped. Block syntax
#: (`#`, `-`, `1.`) needs nothing: free text never starts a line of REPORT.md.
_MD_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                             **{ch: "\\" + ch for ch in "\\`*_[]|~$"}})


def md_html(text: Any) -> str:
    """Text inside an HTML element of Markdown (a <summary>, a <code>), on one line: HTML's specials as entities
    (Markdown's own escapes would show there), line breaks and characters that are not printable as escapes."""
    return single_line(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace('"', "&quot;")


def md_fence(text: str) -> str:
    """The backtick fence of a fenced code block that holds text: longer than any run of backticks in it (and at
    least three), so no line of the text closes the block."""
    return "`" * max(3, max(map(len, re.findall("`+", text)), default=0) + 1)


def md_text(text: Any) -> str:
    """Free text as Markdown that shows exactly that text, on one line of REPORT.md (a table cell or a list item).

    Nothing in it becomes markup: raw HTML (`<script>`), links (`[x](javascript:...)`, `<javascript:...>`),
    emphasis and code show as typed. Every kind of line break becomes `<br>`; other characters that are not
    printable are written as escapes such as \\x1b (see single_line).
    """
    return _md_text(str(text))


@functools.lru_cache(maxsize=65536)
def _md_text(text: str) -> str:
    """md_text of a string; cached: the reports of a fleet's clusters repeat most of their text."""
    return "<br>".join([single_line(line.translate(_MD_ESCAPES)) for line in _LINE_BREAK.split(text)])


def md_code(text: Any, table: bool = True) -> str:
    """Inline code on one line that survives backticks and table pipes inside the text: the fence is one backtick
    longer than the longest run of them in the text; characters that are not printable are escaped (single_line).
    In a table cell (`table`) a pipe is escaped, which GitHub's tables read before the code span; elsewhere the
    backslash would show."""
    return _md_code(str(text), table)


@functools.lru_cache(maxsize=65536)
def _md_code(text: str, table: bool) -> str:
    """md_code of a string; cached like _md_text."""
    text = single_line(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    # CommonMark strips one space from each end of a code span whose text begins and ends with one (and is not all
    # spaces): a pad keeps the text's own (` : ` stays " : "), and keeps a backtick off the fence.
    pad = " " if text.startswith("`") or text.endswith("`") or (
        text.startswith(" ") and text.endswith(" ") and text.strip(" ")) else ""
    code = f"{fence}{pad}{text}{pad}{fence}"
    return code.replace("|", "\\|") if table else code


#: What a CI log reads as a command at the start of a line (after blanks): GitHub Actions' workflow commands
#: (`::error title=...::text`, `::add-mask::`, `::stop-commands::`) and Azure Pipelines' logging commands
#: (`##vso[task...]`, `##[error]`).
_LOG_COMMAND = re.compile(r"[ \t]*(::|##)")


def term_text(text: Any) -> str:
    """A value as text for a terminal or a CI log, on its line: every line break and character that is not
    printable is an escape (single_line: no ANSI escape sequence, no carriage return that overwrites the line),
    and a value that would start a CI log's workflow command (`::error ...`, `##[error]`) at the start of a line
    has its first character escaped as \x3a or \x23."""
    shown = single_line(str(text))
    start = _LOG_COMMAND.match(shown)
    if start:
        at = start.end(1) - 2
        shown = f"{shown[:at]}\\x{ord(shown[at]):02x}{shown[at + 1:]}"
    return shown


def term_lines(text: str) -> str:
    """A message of several lines, gpuconf's own, for a terminal or a CI log: the values in it are term_text
    already; no line of it starts a CI log's workflow command either (the last guard of every error line)."""
    if "::" not in text and "##" not in text:
        return text
    return "\n".join(term_text(line) if _LOG_COMMAND.match(line) else line for line in text.split("\n"))


def show_path(path: Any, medium: str = "log") -> str:
    """The one way a path is printed: a file or folder name gpuconf read or wrote (a folder's entries, a render's
    files, a foreign file, a verified file), which anyone who can write into the folder chooses.

    medium "log" (a terminal or a CI log, stdout or stderr): term_text, so a name with a line break and
    `::error title=...::` in it stays on its line and starts no workflow command; "md" (Markdown outside a table)
    and "md-table" (a table cell): md_code, inline code that nothing in the name closes."""
    if medium == "log":
        return term_text(path)
    if medium in ("md", "md-table"):
        return md_code(path, table=medium == "md-table")
    raise ValueError(f"unknown medium {medium!r}")

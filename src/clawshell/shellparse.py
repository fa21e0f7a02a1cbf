"""Turn a shell command string into every simple command it would run (pure, never raises).

``parse(text)`` returns a :class:`~clawshell.model.ParseResult`: every simple command at
any depth (pipelines, lists, subshells, groups, loops, ``case``, function bodies, command
and process substitutions, here-doc bodies, redirect targets, assignment values) with
its words normalised (quotes, backslashes and ``$'..'`` decoded), plus the commands run
through wrappers (``sudo``, ``bash -c``, ``eval``, ``env``, ``xargs``, ``find -exec``,
``git -c core.pager=...`` ...) and interpreters' inline code.  What cannot be known
statically is reported as a :class:`~clawshell.model.ParseProblem` so the policy can
ask or deny; nothing is ever dropped silently.

How it works
------------
bashlex does the grammar.  Before handing it the text, a small shell-aware scanner
(:class:`_Masker`) finds the constructs bashlex 0.18 cannot parse or gets wrong and
replaces each with a placeholder of the *same length* (so every position stays valid):
``[[ .. ]]`` and ``(( .. ))`` become a ``:`` command, ``$(( .. ))`` / ``$[ .. ]`` a
``${__}`` word, ``for (( .. ))`` a ``for _ in _`` header, ``a=( .. )`` an ``a=___``
word.  The masked regions are then read from the original text by this module.

bashlex is run with ``expansionlimit=-1``: it finds the words (its tokenizer matches
``$(..)``, backticks and quotes the way bash does) but does not look inside them (its
own parse of ``$(..)`` rejects ``&&`` and ``&``, and its quote removal mangles
``$'..'``).  Each word is re-read from the source slice by :meth:`_Parser.norm`,
which decodes quotes and finds every substitution inside it, including inside
``${..}``, arithmetic and here-doc bodies; the code of each substitution, and each
wrapper's inner command, is parsed recursively with the depth counted.

Patched into bashlex once per process (:func:`_bashlex`): grammar actions for
``case``, ``select``, ``coproc`` and ``time`` (the originals raise
NotImplementedError), here-doc delimiters compared after quote removal, here-doc
bodies read inside compound commands (bashlex parsed them as commands), and an
infinite loop on ``${`` without ``}``.

Conventions the policy engine relies on
---------------------------------------
* The wrapper is emitted, then what it runs, with ``via`` extended by a label: the
  wrapper's name (``sudo``, ``env``, ``xargs``, ``nohup`` ...), ``bash -c`` /
  ``sh -c`` (code argument), ``bash <<`` (code from a here-doc or here-string on
  stdin), ``eval``, ``env -S``, ``su -c``, ``flock -c``, ``script -c``, ``watch``,
  ``find -exec`` (``-execdir``/``-ok``/``-okdir``), ``git -c <key>``,
  ``git submodule foreach``, ``git rebase --exec`` ...; substitutions add ``$(...)``,
  ```...``` or ``<(...)``/``>(...)``.  An inner command inherits the wrapper's
  assignments, redirects and ``background``.
* ``[[ .. ]]`` and ``(( .. ))`` are emitted as argv ``("[[", ..., "]]")`` and
  ``("((", expr, "))")``; redirects on a compound command (``{ ..; } > f``) as a
  command with an empty argv.
* Expansions stay literal in words (``$HOME/.ssh``) and their index is in
  ``dynamic_words``; a dynamic command name also yields a ``dynamic_command``
  problem, code built from expansions (``eval "$x"``, ``bash -c "$x"``) a
  ``dynamic_eval`` problem (the literal text is still parsed).

bashlex is imported on the first call (``parsercache.prepare_bashlex`` may have made
that import cheap); importing this module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import replace

from .model import ParseProblem, ParseResult, Redirect, SimpleCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

__all__ = ["parse"]

_BLANK = " \t"
_META = " \t\n;&|()<>"
"""Characters that end an unquoted shell word."""

_KEEP_CMD_START = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
"""Reserved words after which the next word is still in command position."""

_DECLARATIONS = frozenset({"declare", "local", "export", "readonly", "typeset"})
"""Builtins whose ``name=(..)`` arguments are compound (array) assignments."""

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "fish", "yash", "posh", "lksh"})

_DYNAMIC_SPECIAL = "@*#?$!-"


# --------------------------------------------------------------------------- public API


def parse(text: str, *, max_bytes: int = 65536, max_depth: int = 32) -> ParseResult:
    """Parse ``text`` into every simple command it would run; never raises.

    Inputs longer than ``max_bytes`` (UTF-8) are not parsed (problem ``too_large``);
    nesting beyond ``max_depth`` levels of substitution or unwrapping is not followed
    (problem ``too_deep``).  Any failure inside the parser becomes a problem too, so a
    caller always gets a :class:`ParseResult` and never an exception.
    """
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8", "surrogateescape") if isinstance(text, (bytes, bytearray)) else str(text)
        except Exception:
            return ParseResult(source="", commands=(), problems=(ParseProblem("syntax", "command is not text", 0),))
    try:
        if _too_large(text, max_bytes):
            return ParseResult(
                source=text,
                commands=(),
                problems=(ParseProblem("too_large", f"command is longer than {max_bytes} bytes; not parsed", None),),
            )
        parser = _Parser(text, max_depth)
        parser.parse_code(text, depth=0, via=(), background=False, anchor=0, exact=True)
        return parser.result()
    except Exception as exc:  # pragma: no cover - defensive: every path above is guarded
        return ParseResult(
            source=text,
            commands=(),
            problems=(ParseProblem("unsupported", f"parser failure: {type(exc).__name__}: {exc}", None),),
        )


def _too_large(text: str, max_bytes: int) -> bool:
    """True when ``text`` is over ``max_bytes`` in UTF-8 (cheap for the common case)."""
    if len(text) > max_bytes:
        return True
    if len(text) * 4 <= max_bytes:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > max_bytes


# --------------------------------------------------------------------------- bashlex


_BASHLEX: Any = None


def _bashlex() -> Any:
    """Import bashlex (once) and install the grammar actions it lacks."""
    global _BASHLEX
    if _BASHLEX is None:
        import bashlex
        from bashlex import ast as bast
        from bashlex import errors as berrors
        from bashlex import parser as bparser
        from bashlex import subst as bsubst

        _patch_grammar(bparser, bast)
        _patch_subst(bsubst, bast)
        _BASHLEX = (bashlex, berrors)
    return _BASHLEX


def _patch_subst(bsubst: Any, bast: Any) -> None:
    """Stop bashlex looping forever on ``${`` without a closing brace.

    ``subst._paramexpand`` uses ``str.find('}')`` and, when it returns -1, hands back
    index 0, so the word expansion restarts from the beginning for ever (reachable with
    valid bash such as ``$'${'``).  An unclosed ``${`` now runs to the end of the word.
    """
    original = bsubst._paramexpand

    def _paramexpand(parserobj: Any, string: str, sindex: int) -> Any:
        if string.startswith("${", sindex) and string.find("}", sindex + 2) < 0:
            node = bast.node(kind="parameter", value=string[sindex + 2:], pos=(sindex, len(string)))
            return node, len(string)
        return original(parserobj, string, sindex)

    bsubst._paramexpand = _paramexpand


def _patch_grammar(bparser: Any, bast: Any) -> None:
    """Replace bashlex's NotImplementedError grammar actions with ones that build nodes.

    The LALR tables already cover ``case``, ``select``, ``coproc`` and ``time``; only
    their actions raise.  The new actions build ``compound`` nodes (a kind bashlex's
    visitors know) whose ``list`` holds the reserved words, words and command lists,
    which is all the walker needs.
    """
    makeparts = bparser._makeparts
    original_pipeline_command = bparser.p_pipeline_command

    def span(parts: list[Any]) -> tuple[int, int]:
        return (parts[0].pos[0], parts[-1].pos[1])

    def compound(construct: str, parts: list[Any]) -> Any:
        return bast.node(kind="compound", list=parts, redirects=[], pos=span(parts), construct=construct)

    def p_case_command(p: Any) -> None:
        p[0] = compound("case", makeparts(p))

    def p_parts(p: Any) -> None:
        p[0] = makeparts(p)

    def p_select_command(p: Any) -> None:
        p[0] = compound("select", makeparts(p))

    def p_coproc(p: Any) -> None:
        if len(p) == 3 and isinstance(p[2], list):
            # COPROC simple_command: the elements are loose words; make them a command.
            p[2] = bast.node(kind="command", parts=p[2], pos=span(p[2]))
        p[0] = compound("coproc", makeparts(p))

    def p_timespec(p: Any) -> None:
        p[0] = makeparts(p)

    def p_pipeline_command(p: Any) -> None:
        if len(p) == 3 and isinstance(p[1], list):
            words = p[1]
            rest = p[2]
            if rest is not None and getattr(rest, "kind", None) not in (None, "operator"):
                node = rest if rest.kind == "pipeline" else bast.node(kind="pipeline", parts=[rest], pos=rest.pos)
                node.parts[0:0] = words
                node.pos = (words[0].pos[0], node.pos[1])
                p[0] = node
            else:
                p[0] = bast.node(kind="pipeline", parts=list(words), pos=span(words))
            return
        original_pipeline_command(p)

    original_heredoc = bparser.p_redirection_heredoc
    newline = bparser.tokenizer.tokentype.NEWLINE
    gather = bparser.heredoc.gatherheredocuments

    def p_redirection_heredoc(p: Any) -> None:
        # bashlex compares here-doc lines with the raw word (``'EOF'``); bash with the
        # word after quote removal.
        original_heredoc(p)
        output = p[0].output
        output.word = _heredoc_delimiter(output.word)
        # The tokenizer reads here-doc bodies when it reads a newline, but inside a
        # compound command the parser may have fetched that newline as look-ahead
        # before reducing this redirection: the body would then be parsed as commands.
        # Read it now, from just after that newline, as bash does.
        lexer = p.lexer
        current = getattr(lexer, "_current_token", None)
        if getattr(current, "ttype", None) == newline and lexer.redirstack:
            gather(lexer)

    actions = {
        "p_redirection_heredoc": p_redirection_heredoc,
        "p_case_command": p_case_command,
        "p_case_clause": p_parts,
        "p_pattern_list": p_parts,
        "p_case_clause_sequence": p_parts,
        "p_pattern": p_parts,
        "p_select_command": p_select_command,
        "p_coproc": p_coproc,
        "p_timespec": p_timespec,
        "p_pipeline_command": p_pipeline_command,
    }
    for production in bparser.yaccparser.productions:
        action = actions.get(production.func or "")
        if action is not None:
            production.callable = action


# --------------------------------------------------------------------------- masking scanner


class _Exhausted(Exception):
    """The masker's scan budget ran out (adversarially nested input)."""


class _Masker:
    """Shell-aware scanner that finds what bashlex cannot parse and where words end.

    ``scan()`` walks the whole text in command mode and records ``masks``
    (start -> (end, kind)) for ``[[..]]`` (``cond``), ``((..))`` (``arith_cmd``),
    ``$((..))``/``$[..]`` (``arith``), ``for ((..))`` (``arith_for``) and
    ``name=(..)`` (``array``).  The same helpers find the end of ``$(..)``, backticks,
    ``${..}`` and words for :meth:`_Parser.norm`.
    """

    def __init__(self, text: str) -> None:
        self.t = text
        self.n = len(text)
        self.masks: dict[int, tuple[int, str]] = {}
        self.pending: list[tuple[str, bool]] = []
        self.content = False
        # Look-ahead scans (paren_end, cond_end ...) can revisit text; a step budget
        # linear in the input keeps adversarial nesting from going quadratic.
        self.steps = 48 * self.n + 20000
        self.cases_seen = 0
        self._paren_memo: dict[int, int | None] = {}

    def spend(self, count: int) -> None:
        """Use ``count`` steps of the scan budget; raise _Exhausted when it is gone."""
        self.steps -= count
        if self.steps < 0:
            raise _Exhausted()

    # ---- entry points

    def scan(self) -> None:
        """Scan the whole text, recording masks."""
        self.cmd(0, None)

    def masked(self) -> str:
        """The text with every outermost mask replaced by its same-length placeholder."""
        if not self.masks:
            return self.t
        out = []
        pos = 0
        for start in sorted(self.masks):
            end, kind = self.masks[start]
            if start < pos:
                continue  # nested inside a region already replaced
            out.append(self.t[pos:start])
            out.append(_placeholder(kind, self.t[start:end]))
            pos = end
        out.append(self.t[pos:])
        return "".join(out)

    # ---- command mode

    def cmd(self, i: int, closer: str | None) -> int:
        """Scan commands from ``i`` until ``closer`` (``)`` or a backtick) at depth 0.

        Returns the index just after the closer, or ``len(text)``.
        """
        t, n = self.t, self.n
        self.spend(1)
        at_start = True
        assign_ok = True
        depth = 0
        function_name = False
        declaration = False
        cases: list[str] = []  # per open ``case``: "subject", "in", "pattern" or "body"
        while i < n:
            c = t[i]
            if cases and cases[-1] == "pattern":
                i, at_start = self._case_pattern(i, cases)
                continue
            if c == "\n":
                i = self.heredoc_bodies(i + 1)
                at_start = assign_ok = True
                declaration = False
                continue
            if c in _BLANK:
                i += 1
                continue
            if c == "\\":
                if t.startswith("\\\n", i):
                    i += 2
                    continue
                self.content = True
                i = self.word(i)
                at_start = assign_ok = False
                continue
            if closer == "`" and c == "`":
                return i + 1
            if c == "#":
                j = t.find("\n", i)
                i = n if j < 0 else j
                continue
            self.content = True
            if c in ";&|":
                two = t[i:i + 2]
                three = t[i:i + 3]
                if cases and cases[-1] == "body" and (three == ";;&" or two in (";;", ";&")):
                    cases[-1] = "pattern"
                    i += 3 if three == ";;&" else 2
                    continue
                i += 2 if two in ("&&", "||", ";;", "|&", "&>") else 1
                if two == "&>":
                    continue
                at_start = assign_ok = True
                declaration = False
                continue
            if c == "(":
                if at_start and t.startswith("((", i):
                    end = self.arith_end(i)
                    if end is not None:
                        self.masks[i] = (end, "arith_cmd")
                        i = end
                        at_start = assign_ok = False
                        continue
                depth += 1
                i += 1
                at_start = assign_ok = True
                declaration = False
                continue
            if c == ")":
                if depth == 0 and closer == ")":
                    return i + 1
                if depth > 0:
                    depth -= 1
                # ``name ()``: a function body (a compound command) follows
                at_start = t[:i].rstrip(_BLANK).endswith("(")
                assign_ok = False
                i += 1
                continue
            if c in "<>":
                if i + 1 < n and t[i + 1] == "(":
                    i = self.substitution(i + 2)
                    at_start = assign_ok = False
                    continue
                if t.startswith("<<", i) and not t.startswith("<<<", i):
                    i = self.heredoc_operator(i)
                    continue
                while i < n and t[i] in "<>&|-":
                    i += 1
                    if t[i - 1] == "-":
                        break
                continue
            # a word
            start = i
            end = self.word(i)
            word = t[start:end]
            i = end
            if function_name:
                # ``function name``: the body (a compound command) follows
                function_name = False
                at_start = True
                assign_ok = False
                continue
            if at_start:
                if cases and cases[-1] == "body" and word == "esac":
                    cases.pop()
                    at_start = assign_ok = False
                    continue
                if word == "[[":
                    cend = self.cond_end(end)
                    if cend is not None:
                        self.masks[start] = (cend, "cond")
                        i = cend
                    at_start = assign_ok = False
                    continue
                if word == "for":
                    j = end
                    while j < n and t[j] in _BLANK:
                        j += 1
                    if t.startswith("((", j):
                        aend = self.arith_end(j)
                        if aend is not None:
                            k = aend
                            while k < n and t[k] in _BLANK:
                                k += 1
                            # bash allows ``for ((..)) do``; the stand-in needs a separator then
                            sep = k >= n or t[k] in ";\n"
                            self.masks[j] = (aend, "arith_for" if sep else "arith_for_semi")
                            i = aend
                    at_start = assign_ok = False
                    continue
                if word == "case":
                    self.cases_seen += 1
                    cases.append("subject")
                    at_start = assign_ok = False
                    continue
                if word == "function":
                    function_name = True
                    continue
                if word in _KEEP_CMD_START:
                    continue
                if word in _DECLARATIONS:
                    declaration = True  # ``declare a=(1 2)``: compound assignments as arguments
                    at_start = assign_ok = False
                    continue
            if cases and cases[-1] == "subject":
                cases[-1] = "in"
                continue
            if cases and cases[-1] == "in" and word == "in":
                cases[-1] = "pattern"
                continue
            if (assign_ok or declaration) and _assignment_name_end(word) is not None:
                if word.endswith("=") and i < n and t[i] == "(":
                    aend = self.paren_end(i)
                    if aend is not None:
                        self.masks[i] = (aend, "array")
                        i = aend
                # After an assignment, ``[[``/``((`` are no longer reserved words: bash
                # runs a command named ``[[`` and ``||`` inside it separates commands.
                at_start = False
                continue
            at_start = assign_ok = False
        return n

    def substitution(self, i: int) -> int:
        """Scan the body of ``$(``/``<(``/``>(`` starting at ``i``; index after its ``)``.

        bashlex's tokenizer only knows a ``case`` at the very start of a substitution
        (``$(a && case ..)`` ends at the first pattern's ``)``).  bashlex does not need
        the body (it is parsed from the original text), so a body holding a ``case`` is
        masked.
        """
        before = self.cases_seen
        end = self.cmd(i, ")")
        if self.cases_seen > before and end - 1 > i and self.t[end - 1] == ")":
            self.masks[i] = (end - 1, "body")
        return end

    def _case_pattern(self, i: int, cases: list[str]) -> tuple[int, bool]:
        """One step in a ``case`` pattern list; returns (next index, at_start)."""
        t, n = self.t, self.n
        c = t[i]
        if c in " \t\n":
            if c == "\n":
                return self.heredoc_bodies(i + 1), False
            return i + 1, False
        if c == "#":
            j = t.find("\n", i)
            return (n if j < 0 else j), False
        if c in "(|":
            return i + 1, False
        if c == ")":
            cases[-1] = "body"
            return i + 1, True
        if c in ";&<>":
            return i + 1, False
        end = self.word(i)
        if t[i:end] == "esac":
            cases.pop()
        return max(end, i + 1), False

    # ---- heredocs

    def heredoc_operator(self, i: int) -> int:
        """At ``<<`` or ``<<-``: queue the here-doc named by the next word; return its end."""
        t, n = self.t, self.n
        i += 2
        strip = False
        if i < n and t[i] == "-":
            strip = True
            i += 1
        while i < n and t[i] in _BLANK:
            i += 1
        end = self.word(i)
        if end > i:
            self.pending.append((_heredoc_delimiter(t[i:end]), strip))
        return end

    def heredoc_bodies(self, i: int) -> int:
        """At the start of a line: skip the bodies of the queued here-docs."""
        t, n = self.t, self.n
        for delim, strip in self.pending:
            while i < n:
                j = t.find("\n", i)
                line = t[i:] if j < 0 else t[i:j]
                i = n if j < 0 else j + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
        self.pending = []
        return i

    # ---- words and expansions

    def word(self, i: int) -> int:
        """End of the unquoted-context word starting at ``i``."""
        t, n = self.t, self.n
        while i < n:
            c = t[i]
            if c in _META:
                break
            if c == "\\":
                i += 2
            elif c == "'":
                j = t.find("'", i + 1)
                i = n if j < 0 else j + 1
            elif c == '"':
                i = self.dquote(i + 1)
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                i = self.backtick(i + 1)
            else:
                i += 1
        return min(i, n)

    def dquote(self, i: int) -> int:
        """Index after the closing ``"`` of a double-quoted string whose body starts at ``i``."""
        t, n = self.t, self.n
        self.spend(1)
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif c == "$":
                i = self.dollar(i, in_dquote=True)
            elif c == "`":
                i = self.backtick(i + 1)
            else:
                i += 1
        return n

    def dollar(self, i: int, in_dquote: bool = False) -> int:
        """Index after the ``$`` expansion starting at ``i`` (recording arithmetic masks)."""
        t, n = self.t, self.n
        nxt = t[i + 1] if i + 1 < n else ""
        if nxt == "(":
            if i + 2 < n and t[i + 2] == "(":
                end = self.arith_end(i + 1)
                if end is not None:
                    self.masks[i] = (end, "arith")
                    return end
            return self.substitution(i + 2)
        if nxt == "{":
            return self.brace(i + 2)
        if nxt == "[":
            end = self.bracket_end(i + 1)
            if end is not None:
                self.masks[i] = (end, "arith")
                return end
            return i + 2
        if nxt == "'" and not in_dquote:
            return _ansi_c_end(t, i + 2)
        if nxt == '"' and not in_dquote:
            return self.dquote(i + 2)
        return i + 1

    def brace(self, i: int) -> int:
        """Index after the ``}`` closing a ``${`` whose body starts at ``i``."""
        t, n = self.t, self.n
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
            elif c == "}":
                return i + 1
            elif c == "'":
                j = t.find("'", i + 1)
                i = n if j < 0 else j + 1
            elif c == '"':
                i = self.dquote(i + 1)
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                i = self.backtick(i + 1)
            else:
                i += 1
        return n

    def backtick(self, i: int) -> int:
        """Index after the backtick closing one whose body starts at ``i``."""
        t, n = self.t, self.n
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
            elif c == "`":
                return i + 1
            else:
                i += 1
        return n

    def paren_end(self, i: int) -> int | None:
        """Index after the ``)`` matching the ``(`` at ``i`` (quote-aware), or None."""
        if i in self._paren_memo:
            return self._paren_memo[i]
        end = self._paren_end(i)
        self._paren_memo[i] = end
        return end

    def _paren_end(self, i: int) -> int | None:
        t, n = self.t, self.n
        depth = 0
        start = i
        while i < n:
            if not (i - start) & 255:
                self.spend(256)
            c = t[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = t.find("'", i + 1)
                if j < 0:
                    return None
                i = j + 1
                continue
            if c == '"':
                i = self.dquote(i + 1)
                continue
            if c == "`":
                i = self.backtick(i + 1)
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return None

    def arith_end(self, i: int) -> int | None:
        """For ``((`` at ``i``: the end of the arithmetic ``((..))``, or None if it is
        really two nested subshells / a command substitution holding a subshell (the
        inner ``(`` must close right before the outer one, as bash decides)."""
        outer = self.paren_end(i)
        inner = self.paren_end(i + 1)
        if outer is None or inner is None or inner != outer - 1:
            return None
        return outer

    def bracket_end(self, i: int) -> int | None:
        """For ``[`` at ``i`` (``$[``): index after the matching ``]``."""
        depth = 0
        t, n = self.t, self.n
        start = i
        while i < n:
            if not (i - start) & 255:
                self.spend(256)
            c = t[i]
            if c == "[":
                depth += 1
            elif c == "]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return None

    def cond_end(self, i: int) -> int | None:
        """Index after the ``]]`` closing a ``[[`` whose body starts at ``i``, or None."""
        t, n = self.t, self.n
        regex_next = False
        start = i
        while i < n:
            if not (i - start) & 255:
                self.spend(256)
            c = t[i]
            if c in " \t\n":
                i += 1
                continue
            if t.startswith("\\\n", i):
                i += 2
                continue
            if t.startswith("]]", i) and (i + 2 >= n or t[i + 2] in _META):
                return i + 2
            if regex_next:
                i = self.regex_word(i)
                regex_next = False
                continue
            if t.startswith("&&", i) or t.startswith("||", i):
                i += 2
                continue
            if c in "()<>!":
                i += 1
                continue
            if c in ";&|":
                return None
            end = self.word(i)
            if end <= i:
                return None
            regex_next = t[i:end] == "=~"
            i = end
        return None

    def regex_word(self, i: int) -> int:
        """End of the right operand of ``=~`` (parens and ``|`` belong to the word)."""
        t, n = self.t, self.n
        depth = 0
        while i < n:
            c = t[i]
            if c in " \t\n" and depth == 0:
                break
            if c == "\\":
                i += 2
            elif c == "'":
                j = t.find("'", i + 1)
                i = n if j < 0 else j + 1
            elif c == '"':
                i = self.dquote(i + 1)
            elif c == "$":
                i = self.dollar(i)
            elif c == "(":
                depth += 1
                i += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
                i += 1
            else:
                i += 1
        return min(i, n)


def _placeholder(kind: str, original: str) -> str:
    """Same-length stand-in bashlex can parse for a masked region."""
    size = len(original)
    if kind in ("cond", "arith_cmd"):
        return ":" + " " * (size - 1)
    if kind == "arith":
        return "${" + "_" * (size - 3) + "}" if size >= 4 else "_" * size
    if kind in ("array", "body"):
        return "_" * size
    if kind in ("arith_for", "arith_for_semi"):
        body = "_ in _"
        if kind == "arith_for_semi" and size >= len(body) + 1:
            return body + " " * (size - len(body) - 1) + ";"
        return body + " " * (size - len(body))
    return original  # pragma: no cover - every kind is listed above


def _heredoc_delimiter(raw: str) -> str:
    """The here-doc delimiter a raw word stands for (quotes and backslashes removed)."""
    out = []
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n:
            out.append(raw[i + 1])
            i += 2
        elif c in "'\"":
            j = raw.find(c, i + 1)
            j = n if j < 0 else j
            out.append(raw[i + 1:j])
            i = j + 1
        elif c == "$" and i + 1 < n and raw[i + 1] in "'\"":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _ansi_c_end(t: str, i: int) -> int:
    """Index after the ``'`` closing a ``$'..'`` string whose body starts at ``i``."""
    n = len(t)
    while i < n:
        c = t[i]
        if c == "\\":
            i += 2
        elif c == "'":
            return i + 1
        else:
            i += 1
    return n


def _assignment_name_end(word: str) -> int | None:
    """Index of the ``=`` if ``word`` starts like ``NAME=``, ``NAME+=`` or ``NAME[..]=``."""
    if not word or not (word[0].isalpha() or word[0] == "_") or not word[0].isascii():
        return None
    i = 1
    n = len(word)
    while i < n and word[i].isascii() and (word[i].isalnum() or word[i] == "_"):
        i += 1
    if i < n and word[i] == "[":
        depth = 0
        while i < n:
            if word[i] == "[":
                depth += 1
            elif word[i] == "]":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        if i >= n:
            return None
        i += 1
    if i < n and word[i] == "+":
        i += 1
    if i < n and word[i] == "=":
        return i
    return None


_ANSI_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}


def _ansi_c_decode(body: str) -> str:
    """Decode the body of ``$'..'`` the way bash does (\\n, \\xHH, \\NNN, \\uHHHH, \\cX ...)."""
    out = []
    i = 0
    n = len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < n and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(chr(int(body[i + 1:j], 8) & 0xFF))
            i = j
        elif e in "xuU":
            limit = {"x": 2, "u": 4, "U": 8}[e]
            j = i + 2
            while j < n and j < i + 2 + limit and body[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 2:
                out.append("\\" + e)
            else:
                value = int(body[i + 2:j], 16)
                out.append(chr(value) if value <= 0x10FFFF else "\ufffd")
            i = j
        elif e == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


# --------------------------------------------------------------------------- parser


class _Sub:
    """A substitution found in a word: code to parse recursively."""

    __slots__ = ("label", "code", "anchor", "exact", "span")

    def __init__(self, label: str, code: str, anchor: int, exact: bool, span: tuple[int, int]) -> None:
        self.label = label
        self.code = code
        self.anchor = anchor
        self.exact = exact
        self.span = span


class _Word:
    """A normalised word: its value, whether it holds expansions, its substitutions."""

    __slots__ = ("value", "dynamic", "subs")

    def __init__(self, value: str, dynamic: bool, subs: list[_Sub]) -> None:
        self.value = value
        self.dynamic = dynamic
        self.subs = subs


class _Unit:
    """One piece of shell code being walked: its text, masks, depth and context."""

    __slots__ = ("code", "masks", "depth", "via", "anchor", "exact", "masker", "_scratch", "_starts")

    def __init__(self, code: str, masker: _Masker, depth: int, via: tuple[str, ...], anchor: int, exact: bool):
        self.code = code
        self.masker = masker
        self.masks = masker.masks
        self.depth = depth
        self.via = via
        self.anchor = anchor
        self.exact = exact
        self._scratch: _Masker | None = None
        self._starts: tuple[list[int], list[int]] | None = None

    def outer_masks(self) -> tuple[list[int], list[int]]:
        """Sorted (starts, ends) of the outermost masked regions (masks can nest)."""
        if self._starts is None:
            starts: list[int] = []
            ends: list[int] = []
            for start in sorted(self.masks):
                if ends and start < ends[-1]:
                    continue
                starts.append(start)
                ends.append(self.masks[start][0])
            self._starts = (starts, ends)
        return self._starts

    def scratch(self) -> _Masker:
        """A masker over this code for finding word/substitution ends (state reset)."""
        if self._scratch is None:
            self._scratch = _Masker(self.code)
        self._scratch.pending = []
        return self._scratch

    def pos(self, offset: int) -> int:
        """Position in the top-level source of ``offset`` in this unit's code."""
        return self.anchor + offset if self.exact else self.anchor


class _Parser:
    """Walks bashlex trees, normalises words, unwraps wrappers; collects the result."""

    def __init__(self, source: str, max_depth: int) -> None:
        self.source = source
        self.max_depth = max_depth
        self.commands: list[SimpleCommand] = []
        self.problems: list[ParseProblem] = []
        self._problem_set: set[ParseProblem] = set()
        self.functions: list[str] = []
        self._overrun = False
        # Total characters handed to bashlex: nested code (eval/bash -c/substitutions) is
        # parsed again at each level, so cap the sum at a few times the input.
        self.budget = 2 * len(source) + 65536

    def result(self) -> ParseResult:
        """The collected :class:`ParseResult`."""
        return ParseResult(
            source=self.source,
            commands=tuple(self.commands),
            problems=tuple(self.problems),
            functions=tuple(dict.fromkeys(self.functions)),
        )

    def problem(self, kind: str, message: str, position: int | None) -> None:
        """Record a problem once."""
        item = ParseProblem(kind, message, position)
        if item not in self._problem_set:
            self._problem_set.add(item)
            self.problems.append(item)

    # ---- code

    def parse_code(self, code: str, *, depth: int, via: tuple[str, ...], background: bool, anchor: int,
                   exact: bool) -> None:
        """Parse ``code`` and walk every tree in it."""
        if depth > self.max_depth:
            self.problem("too_deep", f"nesting deeper than {self.max_depth} levels is not followed", anchor)
            return
        if len(code) > self.budget:
            self.problem("too_large", "nested code exceeds the analysis budget; not parsed", anchor)
            return
        self.budget -= len(code)
        masker = _Masker(code)
        try:
            masker.scan()
        except RecursionError:
            self.problem("too_deep", "nesting too deep to scan", anchor)
            return
        except _Exhausted:
            self.problem("unsupported", "input too intricate to analyse", anchor)
            return
        if not masker.content:
            return
        unit = _Unit(code, masker, depth, via, anchor, exact)
        where = f" (inside {via[-1]})" if via else ""
        try:
            bashlex, berrors = _bashlex()
        except Exception as exc:
            self.problem("unsupported", f"shell parser unavailable: {exc}", anchor)
            return
        try:
            # expansionlimit=-1: bashlex does not parse inside words at all (its own
            # parse of ``$(..)`` rejects ``&&``/``&`` there); norm() reads substitutions.
            trees = bashlex.parse(masker.masked(), expansionlimit=-1)
        except berrors.ParsingError as exc:
            message = getattr(exc, "message", None) or str(exc)
            position = getattr(exc, "position", None)
            if message == "unexpected EOF" or not isinstance(position, int):
                position = len(code)  # bashlex's EOF position is not an offset in our text
            position = unit.pos(min(max(position, 0), len(code)))
            self.problem("syntax", f"{message}{where}", position)
            return
        except NotImplementedError as exc:
            self.problem("unsupported", f"construct not supported by the parser: {exc}{where}", anchor)
            return
        except RecursionError:
            self.problem("too_deep", f"nesting too deep to parse{where}", anchor)
            return
        except Exception as exc:
            self.problem("unsupported", f"parser could not handle this input ({type(exc).__name__}: {exc}){where}",
                         anchor)
            return
        for tree in trees:
            self.walk(tree, unit, background)

    # ---- tree walking

    def walk(self, node: Any, unit: _Unit, bg: bool) -> None:
        """Walk one bashlex node."""
        kind = node.kind
        if kind == "list":
            self.walk_list(node.parts, unit, bg)
        elif kind == "pipeline":
            for part in node.parts:
                if part.kind not in ("pipe", "reservedword"):
                    self.walk(part, unit, bg)
        elif kind == "command":
            self.command(node, unit, bg)
        elif kind == "compound":
            # a coprocess runs asynchronously, like ``&``
            self.walk_list(node.list, unit, bg or getattr(node, "construct", "") == "coproc")
            if node.redirects:
                self.redirect_only(node, unit, bg)
        elif kind in ("if", "for", "while", "until"):
            self.walk_list(node.parts, unit, bg)
        elif kind == "function":
            name = self.norm(unit, node.name.pos[0], node.name.pos[1])
            self.functions.append(name.value)
            self.walk(node.body, unit, bg)
        elif kind in ("word", "assignment"):
            self.loose_word(node, unit, bg)
        elif kind in ("reservedword", "operator", "pipe"):
            return
        else:
            self.problem("unsupported", f"unexpected shell construct {kind!r}", unit.pos(node.pos[0]))

    def walk_list(self, parts: list[Any], unit: _Unit, bg: bool) -> None:
        """Walk a list; an and-or list followed by ``&`` runs in the background."""
        group: list[Any] = []
        for part in parts:
            if part.kind == "operator":
                if part.op in ("&&", "||"):
                    continue
                for item in group:
                    self.walk(item, unit, bg or part.op == "&")
                group = []
            else:
                group.append(part)
        for item in group:
            self.walk(item, unit, bg)

    def loose_word(self, node: Any, unit: _Unit, bg: bool) -> None:
        """A word outside a simple command (for-list, case subject, pattern): only its
        substitutions run."""
        start, end = node.pos
        mask = unit.masks.get(start)
        if mask is not None and mask[1] in ("arith_for", "arith_for_semi"):
            word = self.norm(unit, start + 2, mask[0] - 2, arith=True)
        elif self.inside_mask(unit, start, end):
            return
        else:
            word = self.norm(unit, start, end)
        self.run_subs(word.subs, unit, bg)

    @staticmethod
    def inside_mask(unit: _Unit, start: int, end: int) -> bool:
        """True when [start, end) lies inside a masked region but does not start it."""
        if not unit.masks:
            return False
        from bisect import bisect_left

        starts, ends = unit.outer_masks()
        k = bisect_left(starts, start) - 1
        return k >= 0 and ends[k] > start

    def redirect_only(self, node: Any, unit: _Unit, bg: bool) -> None:
        """Redirects on a compound command become a redirect-only simple command."""
        subs: list[_Sub] = []
        redirects = tuple(self.redirect(r, unit, subs) for r in node.redirects)
        cmd = SimpleCommand(argv=(), redirects=redirects, via=unit.via,
                            text=unit.code[node.pos[0]:node.pos[1]], background=bg)
        self.commands.append(cmd)
        self.run_subs(subs, unit, bg)

    def command(self, node: Any, unit: _Unit, bg: bool) -> None:
        """Build the SimpleCommand for a bashlex ``command`` node and emit it."""
        code = unit.code
        argv: list[str] = []
        dynamic: list[int] = []
        assignments: list[tuple[str, str]] = []
        redirects: list[Redirect] = []
        subs: list[_Sub] = []
        parts = list(node.parts)
        if parts and parts[0].kind == "word":
            mask = unit.masks.get(parts[0].pos[0])
            if mask is not None and mask[1] in ("cond", "arith_cmd"):
                first = parts.pop(0)
                self.masked_command(unit, first.pos[0], mask, argv, dynamic, subs)
        for part in parts:
            if part.kind == "redirect":
                redirects.append(self.redirect(part, unit, subs))
                continue
            start, end = part.pos
            if part.kind in ("word", "assignment"):
                raw = code[start:end]
                eq = _assignment_name_end(raw) if not argv else None
                if eq is not None:
                    name_raw = raw[:eq]
                    found: list[_Sub] = []
                    if "[" in name_raw:
                        # a subscript is expanded too: a[$(cmd)]=x runs cmd
                        found.extend(self.norm(unit, start + name_raw.index("["), start + eq).subs)
                    name = name_raw[:-1] if name_raw.endswith("+") else name_raw
                    value = self.norm(unit, start + eq + 1, end)
                    found.extend(value.subs)
                    assignments.append((name, value.value))
                    subs.extend(found)
                    continue
                word = self.norm(unit, start, end)
                if word.dynamic:
                    dynamic.append(len(argv))
                argv.append(word.value)
                subs.extend(word.subs)
        cmd = SimpleCommand(
            argv=tuple(argv),
            assignments=tuple(assignments),
            redirects=tuple(redirects),
            dynamic_words=tuple(dynamic),
            via=unit.via,
            text=code[node.pos[0]:node.pos[1]],
            background=bg,
        )
        self.emit(cmd, unit.depth, unit.pos(node.pos[0]))
        self.run_subs(subs, unit, bg)

    def masked_command(self, unit: _Unit, start: int, mask: tuple[int, str], argv: list[str], dynamic: list[int],
                       subs: list[_Sub]) -> None:
        """argv of a ``[[ .. ]]`` or ``(( .. ))`` the masker hid from bashlex."""
        end, kind = mask
        if kind == "arith_cmd":
            word = self.norm(unit, start + 2, end - 2, arith=True)
            argv.extend(["((", unit.code[start + 2:end - 2].strip(), "))"])
            if word.dynamic or any(ch.isalpha() or ch == "_" for ch in argv[1]):
                dynamic.append(1)
            subs.extend(word.subs)
            return
        argv.append("[[")
        t = unit.code
        masker = unit.scratch()
        i = start + 2
        stop = end - 2
        regex_next = False
        while i < stop:
            c = t[i]
            if c in " \t\n":
                i += 1
                continue
            if t.startswith("\\\n", i):
                i += 2
                continue
            if regex_next:
                wend = min(masker.regex_word(i), stop)
                regex_next = False
            elif t.startswith("&&", i) or t.startswith("||", i):
                argv.append(t[i:i + 2])
                i += 2
                continue
            elif c in "()<>!":
                argv.append(c)
                i += 1
                continue
            else:
                wend = min(max(masker.word(i), i + 1), stop)
            word = self.norm(unit, i, wend)
            if word.dynamic:
                dynamic.append(len(argv))
            argv.append(word.value)
            subs.extend(word.subs)
            regex_next = t[i:wend] == "=~"
            i = wend
        argv.append("]]")

    def redirect(self, node: Any, unit: _Unit, subs: list[_Sub]) -> Redirect:
        """Build a Redirect (here-doc bodies and here-strings as their text)."""
        op = node.type
        fd = getattr(node, "input", None)
        fd = fd if isinstance(fd, int) else None
        out = node.output
        code = unit.code
        if op in ("<<", "<<-"):
            heredoc = getattr(node, "heredoc", None)
            raw_delim = code[out.pos[0]:out.pos[1]] if hasattr(out, "pos") else ""
            if heredoc is None:
                return Redirect(op=op, fd=fd, target="", dynamic=False)
            hstart, hend = heredoc.pos
            chunk = code[hstart:hend]
            cut = chunk.rfind("\n")
            body_end = hstart + cut if cut >= 0 else hstart
            if any(ch in raw_delim for ch in "'\"\\"):
                body, dyn = code[hstart:body_end], False
            else:
                word = self.norm(unit, hstart, body_end, heredoc=True)
                body, dyn = word.value, word.dynamic
                subs.extend(word.subs)
            if op == "<<-":
                body = "\n".join(line.lstrip("\t") for line in body.split("\n"))
            if cut >= 0:
                body += "\n"
            return Redirect(op=op, fd=fd, target=body, dynamic=dyn)
        if isinstance(out, int):
            return Redirect(op=op, fd=fd, target=str(out))
        if isinstance(out, str):
            return Redirect(op=op, fd=fd, target=out)
        word = self.norm(unit, out.pos[0], out.pos[1])
        subs.extend(word.subs)
        return Redirect(op=op, fd=fd, target=word.value, dynamic=word.dynamic)

    def run_subs(self, subs: Iterable[_Sub], unit: _Unit, bg: bool) -> None:
        """Parse the code of each substitution."""
        for sub in subs:
            self.parse_code(sub.code, depth=unit.depth + 1, via=unit.via + (sub.label,), background=bg,
                            anchor=unit.pos(sub.anchor) if sub.exact else unit.pos(sub.span[0]),
                            exact=sub.exact and unit.exact)

    # ---- words

    def norm(self, unit: _Unit, start: int, end: int, *, heredoc: bool = False,
             arith: bool = False) -> _Word:
        """Normalise the source slice [start, end) of ``unit`` as one word.

        Quotes, backslashes and ``$'..'`` are decoded; expansions are kept literally
        (``$HOME``, ``${x}``, ``$(cmd)``) and make the word dynamic; every command or
        process substitution inside becomes a :class:`_Sub`.  ``heredoc`` reads an
        unquoted here-doc body (quotes literal); ``arith`` an arithmetic expression.
        If a quote or substitution runs past ``end`` (where bashlex's tokenizer ended
        the word), the two scanners disagree and a problem is recorded.
        """
        t = unit.code
        m = unit.scratch()
        out: list[str] = []
        subs: list[_Sub] = []
        self._overrun = False
        dyn = self._norm_into(t, m, start, end, out, subs, in_dquote=False, heredoc=heredoc)
        if arith:
            dyn = dyn or any(ch.isalpha() or ch == "_" for ch in t[start:end])
        if self._overrun:
            # bashlex's tokenizer ended the word before our scan of a quote or
            # substitution inside it did: one of us is wrong, so say so.
            self.problem("unsupported", "could not agree on where a quote or substitution ends", unit.pos(start))
        return _Word("".join(out), dyn, subs)

    def _clamp(self, close: int, end: int) -> int:
        """``close`` limited to ``end``, noting when it had to be."""
        if close > end:
            self._overrun = True
            return end
        return close

    def _norm_into(self, t: str, m: _Masker, i: int, end: int, out: list[str], subs: list[_Sub], *,
                   in_dquote: bool, heredoc: bool) -> bool:
        """Worker of :meth:`norm`; returns True if an expansion was seen."""
        dyn = False
        while i < end:
            c = t[i]
            if c == "\\":
                if i + 1 >= end:
                    out.append("\\")
                    i += 1
                    continue
                e = t[i + 1]
                if e == "\n":
                    i += 2
                    continue
                if (in_dquote and e not in '$`"\\') or (heredoc and not in_dquote and e not in "$`\\"):
                    out.append("\\" + e)  # a backslash before an ordinary character stays
                else:
                    out.append(e)
                i += 2
                continue
            if in_dquote and c == '"':
                return dyn
            if not in_dquote and not heredoc:
                if c == "'":
                    j = t.find("'", i + 1, end)
                    if j < 0:
                        j = end
                        self._overrun = True
                    out.append(t[i + 1:j])
                    i = j + 1
                    continue
                if c == '"':
                    close = m.dquote(i + 1)
                    dyn = self._norm_into(t, m, i + 1, self._clamp(close, end), out, subs, in_dquote=True,
                                          heredoc=False) or dyn
                    i = close
                    continue
                if c in "<>" and i + 1 < end and t[i + 1] == "(":
                    # process substitution, also in the middle of a word (--file=<(cmd))
                    close = self._clamp(m.cmd(i + 2, ")"), end)
                    subs.append(_Sub(f"{c}(...)", t[i + 2:close - 1], i + 2, True, (i, close)))
                    out.append(t[i:close])
                    dyn = True
                    i = close
                    continue
            if c == "`":
                close = self._clamp(m.backtick(i + 1), end)
                inner = t[i + 1:close - 1] if close - 1 > i else ""
                code = _unescape_backtick(inner, in_dquote)
                subs.append(_Sub("`...`", code, i + 1, code == inner, (i, close)))
                out.append(t[i:close])
                dyn = True
                i = close
                continue
            if c == "$" and i + 1 < end:
                i, d = self._dollar(t, m, i, end, out, subs, in_dquote=in_dquote or heredoc)
                dyn = dyn or d
                continue
            out.append(c)
            i += 1
        return dyn

    def _dollar(self, t: str, m: _Masker, i: int, end: int, out: list[str], subs: list[_Sub], *,
                in_dquote: bool) -> tuple[int, bool]:
        """Normalise one ``$`` expansion at ``i``; returns (next index, dynamic)."""
        nxt = t[i + 1]
        if nxt == "(":
            if i + 2 < end and t[i + 2] == "(":
                close = m.arith_end(i + 1)
                if close is not None and close <= end:
                    out.append(t[i:close])
                    self._norm_into(t, m, i + 3, close - 2, [], subs, in_dquote=False, heredoc=True)
                    return close, True
            close = self._clamp(m.cmd(i + 2, ")"), end)
            subs.append(_Sub("$(...)", t[i + 2:close - 1], i + 2, True, (i, close)))
            out.append(t[i:close])
            return close, True
        if nxt == "{":
            close = self._clamp(m.brace(i + 2), end)
            self._norm_into(t, m, i + 2, close - 1, [], subs, in_dquote=False, heredoc=False)
            out.append(t[i:close])
            return close, True
        if nxt == "[":
            close = m.bracket_end(i + 1)
            if close is not None and close <= end:
                self._norm_into(t, m, i + 2, close - 1, [], subs, in_dquote=False, heredoc=True)
                out.append(t[i:close])
                return close, True
        if nxt == "'" and not in_dquote:
            close = self._clamp(_ansi_c_end(t, i + 2), end)
            out.append(_ansi_c_decode(t[i + 2:close - 1] if close - 1 >= i + 2 else ""))
            return close, False
        if nxt == '"' and not in_dquote:
            close = self._clamp(m.dquote(i + 2), end)
            d = self._norm_into(t, m, i + 2, close, out, subs, in_dquote=True, heredoc=False)
            return close, d
        if nxt.isascii() and (nxt.isalpha() or nxt == "_"):
            j = i + 2
            while j < end and t[j].isascii() and (t[j].isalnum() or t[j] == "_"):
                j += 1
            out.append(t[i:j])
            return j, True
        if nxt.isdigit() or nxt in _DYNAMIC_SPECIAL:
            out.append(t[i:i + 2])
            return i + 2, True
        out.append("$")
        return i + 1, False

    # ---- emitting and unwrapping

    def emit(self, cmd: SimpleCommand, depth: int, position: int) -> None:
        """Record ``cmd`` (with its inline code), then the commands it wraps."""
        if cmd.argv and 0 not in cmd.dynamic_words:
            code = _inline_code(cmd)
            if code is not None:
                cmd = replace(cmd, inline_code=code)
        self.commands.append(cmd)
        if 0 in cmd.dynamic_words:
            self.problem("dynamic_command", f"command name is built from expansions: {cmd.argv[0]}", position)
            return
        if not cmd.argv:
            return
        for inner in _unwrap(cmd):
            if depth + 1 > self.max_depth:
                self.problem("too_deep", f"nesting deeper than {self.max_depth} levels is not followed", position)
                return
            if inner.kind == "argv":
                start = inner.start
                argv = inner.argv if inner.argv is not None else cmd.argv[start:]
                if not argv:
                    continue
                dyn = inner.dynamic if inner.dynamic is not None else tuple(
                    d - start for d in cmd.dynamic_words if d >= start)
                sub = SimpleCommand(
                    argv=tuple(argv),
                    assignments=cmd.assignments + inner.assignments,
                    redirects=cmd.redirects,
                    dynamic_words=tuple(dyn),
                    via=cmd.via + (inner.label,),
                    text=cmd.text,
                    background=cmd.background,
                )
                self.emit(sub, depth + 1, position)
            else:
                if inner.dynamic_code:
                    self.problem("dynamic_eval", inner.reason or f"{inner.label} runs code built from expansions",
                                 position)
                self.parse_code(inner.code, depth=depth + 1, via=cmd.via + (inner.label,),
                                background=cmd.background, anchor=position, exact=False)


def _unescape_backtick(inner: str, in_dquote: bool) -> str:
    """The command inside backticks: ``\\\\``, ``\\``` and ``\\$`` (and ``\\"`` in quotes) unescaped."""
    if "\\" not in inner:
        return inner
    special = '\\`$"' if in_dquote else "\\`$"
    out = []
    i = 0
    n = len(inner)
    while i < n:
        c = inner[i]
        if c == "\\" and i + 1 < n and inner[i + 1] in special:
            out.append(inner[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --------------------------------------------------------------------------- wrappers


class _Inner:
    """What a wrapper runs: an argv slice (``kind="argv"``) or shell code (``"code"``)."""

    __slots__ = ("kind", "label", "start", "argv", "dynamic", "assignments", "code", "dynamic_code", "reason")

    def __init__(self, kind: str, label: str, *, start: int = 0, argv: tuple[str, ...] | None = None,
                 dynamic: tuple[int, ...] | None = None, assignments: tuple[tuple[str, str], ...] = (),
                 code: str = "", dynamic_code: bool = False, reason: str = "") -> None:
        self.kind = kind
        self.label = label
        self.start = start
        self.argv = argv
        self.dynamic = dynamic
        self.assignments = assignments
        self.code = code
        self.dynamic_code = dynamic_code
        self.reason = reason


def _skip_options(argv: tuple[str, ...], i: int, *, short_arg: str = "", long_arg: Iterable[str] = (),
                  short_attached: str = "", plus: bool = False) -> tuple[int, list[tuple[str, str | None, int]]]:
    """Skip getopt-style options from ``argv[i]`` up to the first operand.

    Returns (index of the first operand, [(option, value, index of the value or -1)]).
    ``short_arg`` letters take a value (attached or the next word); ``short_attached``
    letters take the rest of their cluster only; ``--`` ends the options.
    """
    seen: list[tuple[str, str | None, int]] = []
    long_arg = frozenset(long_arg)
    n = len(argv)
    while i < n:
        a = argv[i]
        if a == "--":
            return i + 1, seen
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if not eq and name in long_arg:
                seen.append((name, argv[i + 1] if i + 1 < n else None, i + 1))
                i += 2
            else:
                seen.append((name, val if eq else None, i if eq else -1))
                i += 1
            continue
        if len(a) > 1 and (a[0] == "-" or (plus and a[0] == "+")):
            j = 1
            consumed = False
            while j < len(a):
                ch = a[j]
                if ch in short_arg:
                    rest = a[j + 1:]
                    if rest:
                        seen.append(("-" + ch, rest, i))
                    else:
                        seen.append(("-" + ch, argv[i + 1] if i + 1 < n else None, i + 1))
                        consumed = True
                    break
                if ch in short_attached:
                    seen.append(("-" + ch, a[j + 1:], i))
                    break
                seen.append(("-" + ch, None, -1))
                j += 1
            i += 2 if consumed else 1
            continue
        return i, seen
    return i, seen


def _has(seen: list[tuple[str, str | None, int]], *names: str) -> bool:
    return any(name in names for name, _v, _i in seen)


def _arg_wrapper(label: str, start: int) -> list[_Inner]:
    return [_Inner("argv", label, start=start)]


def _code(label: str, cmd: SimpleCommand, indexes: Iterable[int], code: str) -> _Inner:
    """Shell code taken from argv words at ``indexes`` (dynamic if any of them is)."""
    dyn = any(i in cmd.dynamic_words for i in indexes)
    return _Inner("code", label, code=code, dynamic_code=dyn)


def _unwrap(cmd: SimpleCommand) -> list[_Inner]:
    """What ``cmd`` runs inside itself, if it is a wrapper."""
    name = cmd.name
    handler = _WRAPPERS.get(name)
    if handler is None:
        if name in _SHELLS:
            return _shell(cmd, name)
        return []
    return handler(cmd)


def _shell(cmd: SimpleCommand, name: str) -> list[_Inner]:
    """``bash [-opts] -c CODE [ARG0 ARG...]``, or code from a here-doc on stdin."""
    argv = cmd.argv
    i = 1
    n = len(argv)
    has_c = False
    reads_stdin = False
    while i < n:
        a = argv[i]
        if a in ("--", "-"):
            i += 1
            break
        if a.startswith("--"):
            if a in ("--rcfile", "--init-file"):
                i += 2
            else:
                i += 1
            continue
        if len(a) > 1 and a[0] in "-+":
            letters = a[1:]
            if "c" in letters and a[0] == "-":
                has_c = True
            if "s" in letters and a[0] == "-":
                reads_stdin = True
            i += 1
            if any(ch in "oO" for ch in letters) and i < n:
                i += 1  # -o option / -O shopt take a name
            continue
        break
    if has_c:
        if i < n:
            return [_code(f"{name} -c", cmd, (i,), argv[i])]
        return []
    if i < n and not reads_stdin:
        return []  # a script file: its content is not visible here
    stdin = _stdin_code(cmd)
    if stdin is not None:
        return [_Inner("code", f"{name} <<", code=stdin[0], dynamic_code=stdin[1])]
    return []


def _stdin_code(cmd: SimpleCommand) -> tuple[str, bool] | None:
    """(text, dynamic) of the last here-doc/here-string feeding stdin, if any."""
    found = None
    for r in cmd.redirects:
        if r.op in ("<<", "<<-", "<<<") and r.fd in (None, 0):
            found = (r.target, r.dynamic)
        elif r.op == "<" and r.fd in (None, 0):
            found = None
    return found


def _eval(cmd: SimpleCommand) -> list[_Inner]:
    args = cmd.argv[1:]
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        return []
    first = len(cmd.argv) - len(args)
    return [_code("eval", cmd, range(first, len(cmd.argv)), " ".join(args))]


def _env(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    i, seen = _skip_options(argv, 1, short_arg="uCSP", long_arg=("--unset", "--chdir", "--split-string"))
    assignments: list[tuple[str, str]] = []
    while i < len(argv) and argv[i] != "-" and _assignment_name_end(argv[i]) is not None and "[" not in argv[i]:
        eq = argv[i].index("=")
        assignments.append((argv[i][:eq], argv[i][eq + 1:]))
        i += 1
    if i < len(argv) and argv[i] == "-":
        i += 1
        while i < len(argv) and _assignment_name_end(argv[i]) is not None:
            eq = argv[i].index("=")
            assignments.append((argv[i][:eq], argv[i][eq + 1:]))
            i += 1
    for opt, value, index in seen:
        if opt in ("-S", "--split-string") and value is not None:
            rest = " ".join(_quote_word(w) for w in argv[i:])
            code = value + (" " + rest if rest else "")
            return [_Inner("code", "env -S", code=code, dynamic_code=index in cmd.dynamic_words)]
    return [_Inner("argv", "env", start=i, assignments=tuple(assignments))]


def _quote_word(word: str) -> str:
    """Single-quote ``word`` for re-parsing as shell code."""
    return "'" + word.replace("'", "'\\''") + "'"


def _command(cmd: SimpleCommand) -> list[_Inner]:
    i, seen = _skip_options(cmd.argv, 1)
    if _has(seen, "-v", "-V"):
        return []  # only looks the name up
    return _arg_wrapper("command", i)


def _builtin(cmd: SimpleCommand) -> list[_Inner]:
    return _arg_wrapper("builtin", 2 if cmd.argv[1:2] == ("--",) else 1)


def _exec(cmd: SimpleCommand) -> list[_Inner]:
    i, _ = _skip_options(cmd.argv, 1, short_arg="a")
    return _arg_wrapper("exec", i)


def _simple(label: str, short_arg: str = "", long_arg: Iterable[str] = (), short_attached: str = "") -> Any:
    """Handler for ``WRAPPER [options] CMD ARGS...``."""

    def handler(cmd: SimpleCommand) -> list[_Inner]:
        i, _ = _skip_options(cmd.argv, 1, short_arg=short_arg, long_arg=long_arg, short_attached=short_attached)
        return _arg_wrapper(label, i)

    return handler


def _timeout(cmd: SimpleCommand) -> list[_Inner]:
    i, _ = _skip_options(cmd.argv, 1, short_arg="sk", long_arg=("--signal", "--kill-after"))
    return _arg_wrapper("timeout", i + 1)  # skip the duration


def _nice(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    i = 1
    if i < len(argv) and len(argv[i]) > 1 and argv[i][0] == "-" and argv[i][1:].lstrip("-").isdigit():
        i += 1  # old style: nice -10 cmd
    i, _ = _skip_options(argv, i, short_arg="n", long_arg=("--adjustment",))
    return _arg_wrapper("nice", i)


def _xargs(cmd: SimpleCommand) -> list[_Inner]:
    i, _ = _skip_options(
        cmd.argv, 1, short_arg="IEnLPsda", short_attached="iel",
        long_arg=("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"),
    )
    if i >= len(cmd.argv):
        return [_Inner("argv", "xargs", argv=("echo",), dynamic=())]
    return _arg_wrapper("xargs", i)


def _find(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    out = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and not (argv[j] == ";" or (argv[j] == "+" and argv[j - 1] == "{}")):
                j += 1
            if j > i + 1:
                inner = argv[i + 1:j]
                dyn = tuple(d - (i + 1) for d in cmd.dynamic_words if i + 1 <= d < j)
                out.append(_Inner("argv", f"find {a}", argv=inner, dynamic=dyn))
            i = j + 1
            continue
        i += 1
    return out


def _sudo(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    i, seen = _skip_options(
        argv, 1, short_arg="ugpCDrtTUR",
        long_arg=("--user", "--group", "--prompt", "--close-from", "--chdir", "--role", "--type",
                  "--command-timeout", "--other-user", "--chroot", "--host"),
    )
    if _has(seen, "-e", "--edit", "-l", "--list", "-v", "--validate", "-k", "-K", "--reset-timestamp",
            "--remove-timestamp", "-V", "--version", "-h", "--help"):
        return []
    assignments = []
    while i < len(argv) and _assignment_name_end(argv[i]) is not None:
        eq = argv[i].index("=")
        assignments.append((argv[i][:eq], argv[i][eq + 1:]))
        i += 1
    return [_Inner("argv", cmd.name, start=i, assignments=tuple(assignments))]


def _doas(cmd: SimpleCommand) -> list[_Inner]:
    i, _ = _skip_options(cmd.argv, 1, short_arg="uC")
    return _arg_wrapper("doas", i)


def _su(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    i = 1
    code = None
    code_index = -1
    while i < len(argv):
        a = argv[i]
        if a in ("-c", "--command", "--session-command"):
            if i + 1 < len(argv):
                code, code_index = argv[i + 1], i + 1
            i += 2
            continue
        if a.startswith("--command=") or a.startswith("--session-command="):
            code, code_index = a.split("=", 1)[1], i
            i += 1
            continue
        if a in ("-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"):
            i += 2
            continue
        if a.startswith("-c") and len(a) > 2 and not a.startswith("--"):
            code, code_index = a[2:], i
        i += 1
    if code is None:
        return []
    return [_code("su -c", cmd, (code_index,), code)]


def _watch(cmd: SimpleCommand) -> list[_Inner]:
    i, seen = _skip_options(cmd.argv, 1, short_arg="nq", long_arg=("--interval", "--equexit"))
    if _has(seen, "-x", "--exec"):
        return _arg_wrapper("watch", i)
    if i >= len(cmd.argv):
        return []
    return [_code("watch", cmd, range(i, len(cmd.argv)), " ".join(cmd.argv[i:]))]


def _chroot(cmd: SimpleCommand) -> list[_Inner]:
    i, _ = _skip_options(cmd.argv, 1, long_arg=("--userspec", "--groups"))
    return _arg_wrapper("chroot", i + 1)


def _flock(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    i, seen = _skip_options(argv, 1, short_arg="wEc", long_arg=("--timeout", "--conflict-exit-code", "--command"))
    for opt, value, index in seen:
        if opt in ("-c", "--command") and value is not None:
            return [_code("flock -c", cmd, (index,), value)]
    i += 1  # the lock file
    j, seen = _skip_options(argv, i, short_arg="wEc", long_arg=("--timeout", "--conflict-exit-code", "--command"))
    for opt, value, index in seen:
        if opt in ("-c", "--command") and value is not None:
            return [_code("flock -c", cmd, (index,), value)]
    return _arg_wrapper("flock", j)


def _script(cmd: SimpleCommand) -> list[_Inner]:
    _i, seen = _skip_options(
        cmd.argv, 1, short_arg="cEIOBTmo", short_attached="t",
        long_arg=("--command", "--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format",
                  "--output-limit"),
    )
    for opt, value, index in seen:
        if opt in ("-c", "--command") and value is not None:
            return [_code("script -c", cmd, (index,), value)]
    return []


def _trap(cmd: SimpleCommand) -> list[_Inner]:
    """``trap 'code' SIGNAL...``: the code runs later, in this shell."""
    argv = cmd.argv
    i = 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    if len(argv) - i < 2 or argv[i].startswith("-"):
        return []  # -p/-l, a reset (``trap - INT``) or a lone signal
    return [_code("trap", cmd, (i,), argv[i])]


def _busybox(cmd: SimpleCommand) -> list[_Inner]:
    return _arg_wrapper("busybox", 1)


_GIT_SHELL_KEYS = frozenset({
    "core.pager", "core.sshcommand", "core.editor", "core.askpass", "core.fsmonitor", "core.gitproxy",
    "core.alternaterefscommand", "sequence.editor", "diff.external", "credential.helper", "gpg.program",
    "interactive.difffilter", "uploadpack.packobjectshook", "sendemail.tocmd", "sendemail.cccmd",
    "sendemail.sendmailcmd", "sendemail.smtpserver",
})
"""git config keys whose value git runs through the shell."""

_GIT_SHELL_SUFFIXES = {
    "diff": ("command", "textconv"), "merge": ("driver",), "filter": ("clean", "smudge", "process"),
    "credential": ("helper",), "gpg": ("program",), "mergetool": ("cmd",), "difftool": ("cmd",),
    "browser": ("cmd",), "remote": ("uploadpack", "receivepack"),
}

_GIT_BOOLEANS = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})


def _git_key_code(key: str, value: str) -> str | None:
    """The shell code a ``git -c key=value`` setting would run, or None."""
    low = key.lower()
    section, _, rest = low.partition(".")
    variable = rest.rsplit(".", 1)[-1]
    if section == "alias":
        return value[1:] if value.startswith("!") else None
    if section == "pager" or low == "core.fsmonitor":
        return None if value.lower() in _GIT_BOOLEANS else value
    if low in _GIT_SHELL_KEYS:
        return value or None
    if "." in rest and variable in _GIT_SHELL_SUFFIXES.get(section, ()):
        return value or None
    return None


def _git_key_includes(key: str) -> bool:
    """True for ``include.path`` / ``includeIf.<cond>.path``: another config file is read."""
    low = key.lower()
    return low == "include.path" or (low.startswith("includeif.") and low.endswith(".path"))


def _git_key_runs_code(key: str) -> bool:
    """True when ``key`` names a setting whose value may be run as a command."""
    return _git_key_code(key, "!x" if key.lower().startswith("alias.") else "x") is not None


_GIT_CODE_OPTIONS = {
    "rebase": ("--exec", "-x"),
    "difftool": ("--extcmd", "-x"),
    "filter-branch": ("--tree-filter", "--index-filter", "--msg-filter", "--commit-filter", "--env-filter",
                      "--parent-filter", "--tag-name-filter", "--setup"),
    "send-email": ("--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd", "--smtp-server"),
    "fetch": ("--upload-pack",), "pull": ("--upload-pack",), "clone": ("--upload-pack", "-u"),
    "ls-remote": ("--upload-pack",), "push": ("--receive-pack", "--exec"), "archive": ("--exec",),
    "grep": ("--open-files-in-pager", "-O"),
}


def _git(cmd: SimpleCommand) -> list[_Inner]:
    argv = cmd.argv
    out: list[_Inner] = []
    i = 1
    n = len(argv)
    while i < n:
        a = argv[i]
        if a == "-c" or (a.startswith("-c") and not a.startswith("--")):
            setting, index = (argv[i + 1], i + 1) if a == "-c" and i + 1 < n else (a[2:], i)
            i += 2 if a == "-c" else 1
            key, _eq, value = setting.partition("=")
            code = _git_key_code(key, value)
            if code is not None:
                out.append(_code(f"git -c {key}", cmd, (index,), code))
            elif _git_key_includes(key):
                # an included config file may set core.pager, aliases ...: not visible here
                out.append(_Inner("code", f"git -c {key}", code="", dynamic_code=True,
                                  reason=f"git -c {key} reads a config file that may set commands to run"))
            continue
        if a == "--config-env" or a.startswith("--config-env="):
            setting = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < n else "")
            i += 1 if "=" in a else 2
            key = setting.partition("=")[0]
            if _git_key_runs_code(key) or _git_key_includes(key):
                out.append(_Inner("code", f"git --config-env {key}", code="", dynamic_code=True,
                                  reason=f"git --config-env {key} takes its value from the environment"))
            continue
        if a in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--attr-source", "--list-cmds"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        break
    if i >= n:
        return out
    sub = argv[i]
    rest_start = i + 1
    if sub == "submodule":
        j = rest_start
        while j < n and argv[j].startswith("-"):
            j += 1
        if j < n and argv[j] == "foreach":
            k, _ = _skip_options(argv, j + 1)
            if k < n:
                out.append(_code("git submodule foreach", cmd, range(k, n), " ".join(argv[k:])))
    elif sub == "bisect" and rest_start < n and argv[rest_start] == "run":
        if rest_start + 1 < n:
            out.append(_Inner("argv", "git bisect run", start=rest_start + 1))
    elif sub in _GIT_CODE_OPTIONS:
        names = _GIT_CODE_OPTIONS[sub]
        j = rest_start
        while j < n:
            a = argv[j]
            if a == "--":
                break
            for opt in names:
                if a == opt and j + 1 < n:
                    out.append(_code(f"git {sub} {opt}", cmd, (j + 1,), argv[j + 1]))
                    j += 1
                    break
                if opt.startswith("--") and a.startswith(opt + "="):
                    out.append(_code(f"git {sub} {opt}", cmd, (j,), a[len(opt) + 1:]))
                    break
                if not opt.startswith("--") and a.startswith(opt) and len(a) > len(opt):
                    out.append(_code(f"git {sub} {opt}", cmd, (j,), a[len(opt):]))
                    break
            j += 1
    return out


_WRAPPERS: dict[str, Any] = {
    "eval": _eval,
    "env": _env,
    "command": _command,
    "builtin": _builtin,
    "exec": _exec,
    "nohup": _simple("nohup"),
    "timeout": _timeout,
    "nice": _nice,
    "ionice": _simple("ionice", short_arg="cnpPu", long_arg=("--class", "--classdata", "--pid", "--pgid", "--uid")),
    "stdbuf": _simple("stdbuf", short_arg="ioe", long_arg=("--input", "--output", "--error")),
    "time": _simple("time", short_arg="fo", long_arg=("--format", "--output")),
    "xargs": _xargs,
    "find": _find,
    "sudo": _sudo,
    "sudoedit": lambda cmd: [],
    "doas": _doas,
    "su": _su,
    "git": _git,
    "watch": _watch,
    "setsid": _simple("setsid"),
    "chroot": _chroot,
    "flock": _flock,
    "strace": _simple("strace", short_arg="eopsuEabIOPXS"),
    "ltrace": _simple("ltrace", short_arg="eopsuaADlnxFwL"),
    "unbuffer": _simple("unbuffer"),
    "script": _script,
    "busybox": _busybox,
    "trap": _trap,
}


# --------------------------------------------------------------------------- interpreters


def _is_python(name: str) -> bool:
    if name in ("python", "pypy", "pypy3"):
        return True
    rest = name[6:] if name.startswith("python") else ""
    return bool(rest) and all(ch.isdigit() or ch == "." for ch in rest) and rest[0].isdigit()


class _Interp:
    """Command-line shape of one interpreter family."""

    __slots__ = ("language", "code_chars", "arg_chars", "attached_chars", "stop_chars", "long_code", "long_arg",
                 "long_stop", "code_ends_options", "cluster_code_next", "octal_chars")

    def __init__(self, language: str, code_chars: str, arg_chars: str = "", attached_chars: str = "",
                 stop_chars: str = "", long_code: Iterable[str] = (), long_arg: Iterable[str] = (),
                 long_stop: Iterable[str] = ("--version", "--help"), code_ends_options: bool = False,
                 cluster_code_next: bool = False, octal_chars: str = "") -> None:
        self.language = language
        self.code_chars = code_chars
        self.arg_chars = arg_chars
        self.attached_chars = attached_chars
        self.stop_chars = stop_chars
        self.long_code = frozenset(long_code)
        self.long_arg = frozenset(long_arg)
        self.long_stop = frozenset(long_stop)
        self.code_ends_options = code_ends_options
        self.cluster_code_next = cluster_code_next
        # letters taking optional attached octal digits (-l, -0) before more letters
        self.octal_chars = octal_chars


_PYTHON = _Interp("python", "c", arg_chars="WXQ", stop_chars="mVh?", long_arg=("--check-hash-based-pycs",),
                  code_ends_options=True)
_PERL = _Interp("perl", "eE", arg_chars="I", attached_chars="MmixCdD", stop_chars="vhV", octal_chars="l0")
_RUBY = _Interp("ruby", "e", arg_chars="IrCE", attached_chars="FxiK", stop_chars="h", octal_chars="0TW")
_NODE = _Interp("node", "ep", arg_chars="rC", stop_chars="vh", long_code=("--eval", "--print"),
                long_arg=("--require", "--import", "--loader", "--experimental-loader", "--conditions",
                          "--input-type", "--title", "--inspect-port"),
                code_ends_options=True, cluster_code_next=True)
_PHP = _Interp("php", "rRBE", arg_chars="cdzt", stop_chars="fSvhmia")
_INTERPRETERS = {
    "perl": _PERL, "ruby": _RUBY, "node": _NODE, "nodejs": _NODE, "bun": _NODE, "php": _PHP,
}
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"})


def _inline_code(cmd: SimpleCommand) -> tuple[str, str] | None:
    """``(language, code)`` when ``cmd`` runs inline interpreter code."""
    name = cmd.name
    if _is_python(name):
        spec: _Interp | None = _PYTHON
    else:
        spec = _INTERPRETERS.get(name)
        if spec is None and name.startswith("perl") and name[4:].replace(".", "").isdigit():
            spec = _PERL
        if spec is None and name.startswith("ruby") and name[4:].replace(".", "").isdigit():
            spec = _RUBY
    if spec is not None:
        return _interp_code(cmd, spec)
    if name in _AWKS:
        return _awk_code(cmd)
    if name == "deno":
        return _deno_code(cmd)
    return None


def _interp_code(cmd: SimpleCommand, spec: _Interp) -> tuple[str, str] | None:
    argv = cmd.argv
    n = len(argv)
    codes: list[str] = []
    i = 1
    while i < n:
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a == "-":
            codes_or_stdin = "\n".join(codes) if codes else _stdin_text(cmd)
            return spec.language, codes_or_stdin
        if a.startswith("--"):
            name, eq, val = a.partition("=")
            if name in spec.long_stop:
                return None
            if name in spec.long_code:
                if eq:
                    codes.append(val)
                elif i + 1 < n:
                    codes.append(argv[i + 1])
                    i += 1
                i += 1
                if spec.code_ends_options:
                    break
                continue
            i += 2 if (not eq and name in spec.long_arg) else 1
            continue
        if len(a) > 1 and a[0] == "-":
            j = 1
            step = 1
            found = False
            while j < len(a):
                ch = a[j]
                if ch in spec.stop_chars:
                    return None
                if ch in spec.code_chars:
                    rest = a[j + 1:]
                    if rest and not (spec.cluster_code_next and all(r in spec.code_chars for r in rest)):
                        codes.append(rest)
                    elif i + 1 < n:
                        codes.append(argv[i + 1])
                        step = 2
                    found = True
                    break
                if ch in spec.arg_chars:
                    if not a[j + 1:]:
                        step = 2
                    break
                if ch in spec.attached_chars:
                    break
                j += 1
                if ch in spec.octal_chars:
                    if ch == "0" and a[j:j + 1] in ("x", "X"):
                        j += 1
                        while j < len(a) and a[j] in "0123456789abcdefABCDEF":
                            j += 1
                    while j < len(a) and a[j] in "01234567":
                        j += 1
            i += step
            if found and spec.code_ends_options:
                break
            continue
        break
    if codes:
        return spec.language, "\n".join(codes)
    if i < n:
        return None  # a script file
    return spec.language, _stdin_text(cmd)


def _stdin_text(cmd: SimpleCommand) -> str:
    found = _stdin_code(cmd)
    return found[0] if found is not None else ""


def _awk_code(cmd: SimpleCommand) -> tuple[str, str] | None:
    i, seen = _skip_options(cmd.argv, 1, short_arg="FvfEilW",
                            long_arg=("--field-separator", "--assign", "--file", "--exec", "--include", "--load",
                                      "--source"))
    sources = [value for opt, value, _ in seen if opt in ("-e", "--source") and value is not None]
    if _has(seen, "-f", "--file", "-E", "--exec") and not sources:
        return None
    if _has(seen, "--version", "--help", "-V"):
        return None
    if sources:
        return "awk", "\n".join(sources)
    if i < len(cmd.argv):
        return "awk", cmd.argv[i]
    return None


def _deno_code(cmd: SimpleCommand) -> tuple[str, str] | None:
    argv = cmd.argv
    if len(argv) < 2 or argv[1] != "eval":
        return None
    i, _ = _skip_options(argv, 2)
    if i < len(argv):
        return "deno", argv[i]
    return None

"""Which command lines the leader of a process the harness started may show in /proc/PID/cmdline.

Why (issue 37): a journal's ``process`` record is undone by signalling the process group of
its pid, and a pid with its start tick are both world-readable, so they alone would let a
record name any process group on the machine. The record also holds the command the harness
started (``command``, as :meth:`harness.nodes.base.Node.spawn` was given it), and the undo
signals only while the leader's /proc/PID/cmdline is one that command produces:

* the shell that runs it: ``sh -c COMMAND`` (this machine's :class:`~harness.nodes.local.LocalNode`),
  or the session leader of :mod:`harness.nodes.remote_process` on a node, a ``sh -c`` whose
  arguments hold ``harness-proc`` and then ``COMMAND`` as one argument each;
* or a program that shell replaced itself with: the words of a simple command of
  ``COMMAND`` (``exec qemu-system-x86_64 ...``; a shell may exec a last simple command
  without being told), through ``sh -c``, ``nsenter ... --`` and ``env`` as they exec.

Nothing is expanded: a word with ``$`` or a glob stands for itself, so a command line that
only an expansion produced does not match and is refused (the undo says how to stop it by
hand). The shell side of the comparison is :data:`CHECK_CMDLINE_SH`.
"""

from __future__ import annotations

import shlex

#: Separators of simple commands (as shlex reads them with these punctuation characters).
_OPERATORS = {";", "&", "&&", "|", "||", "|&", ";;", "(", ")", "\n"}
_REDIRECTS = {"<", ">", ">>", "<<", "<&", ">&", "<>", ">|", "&>"}
_SHELLS = {"sh", "bash", "dash", "ash", "busybox"}
_MAX_DEPTH = 4


def _simple_commands(text: str) -> list[list[str]]:
    """The simple commands of shell text, each as its words (redirections and their targets
    and leading assignments dropped); [] if shlex cannot read it (unbalanced quotes). A
    number right before a redirection is the fd of ``2>file`` or an argument of ``sleep 5
    >file`` (shlex does not say which): both readings are returned."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>\n")
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:
        return []
    out: list[list[str]] = []
    words: list[str] = []
    fds: set[int] = set()  # indices of words that may be a redirection's fd

    def end() -> None:
        if words:
            out.append(list(words))
            if fds:
                out.append([w for i, w in enumerate(words) if i not in fds])
        words.clear()
        fds.clear()

    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token in _OPERATORS or set(token) <= set(";&|()\n"):
            end()
        elif token in _REDIRECTS or set(token) <= set("<>&|"):
            skip = True  # its target is the next word
            if words and words[-1].isdigit():
                fds.add(len(words) - 1)
        elif not words and "=" in token and token.split("=", 1)[0].isidentifier():
            continue  # VAR=value before the program
        else:
            words.append(token)
    end()
    return out


def exec_forms(command: str, depth: int = 0) -> list[list[str]]:
    """Every argv a shell running ``command`` may have exec'd into (see the module's doc)."""
    if depth > _MAX_DEPTH:
        return []
    forms: list[list[str]] = []
    for words in _simple_commands(command):
        forms += _execs(words, depth)
    return forms


def _execs(words: list[str], depth: int) -> list[list[str]]:
    """``words`` and what it execs in turn (``exec``, ``env``, ``nsenter --``, ``sh -c``)."""
    while words and words[0] == "exec":
        words = words[1:]
    if not words:
        return []
    out = [words]
    name = words[0].rsplit("/", 1)[-1]
    if name == "env":
        rest = words[1:]
        while rest and ("=" in rest[0] or rest[0].startswith("-")):
            rest = rest[1:]
        out += _execs(rest, depth)
    elif name == "nsenter" and "--" in words:
        out += _execs(words[words.index("--") + 1:], depth)
    elif name in _SHELLS and len(words) >= 3 and words[1] == "-c":
        out += exec_forms(words[2], depth + 1)
    return out


def cmdline_word(argv: list[str]) -> str:
    """An argv as :data:`CHECK_CMDLINE_SH` reads /proc/PID/cmdline: each argument followed by
    byte 1 (for its NUL), line breaks as byte 2 (a shell's ``$(...)`` would strip a last one)."""
    return "".join(arg.replace("\n", "\x02") + "\x01" for arg in argv)


def accepted_cmdlines(command: str) -> list[str]:
    """The command lines (as :func:`cmdline_word`) a leader running ``command`` may show:
    the shell it started in and every argv that shell may exec into."""
    forms = [["sh", "-c", command], *exec_forms(command)]
    return list(dict.fromkeys(cmdline_word(argv) for argv in forms))


def sound_command(command) -> bool:
    """A recorded command a process could have been started with: text without NUL (an
    argument cannot hold one) or the bytes 1 and 2 the comparison uses, at most 128 KiB."""
    return (isinstance(command, str) and 0 < len(command) <= 1 << 17
            and not any(c in command for c in "\x00\x01\x02"))


#: Shell (POSIX sh): ``cmdline_ok PID TEXT WORD...`` succeeds if /proc/PID/cmdline, read as
#: :func:`cmdline_word` writes it, is one of the WORDs or that of the session leader of a
#: remote process running TEXT (``sh -c``, then among its arguments ``harness-proc`` and TEXT
#: as :func:`text_word` writes it); it sets ``found`` to what it read. An ended process (a
#: zombie) or a kernel thread has an empty command line: never a match.
CHECK_CMDLINE_SH = r"""cmdline_ok() {
  found=$(tr '\000\n' '\001\002' </proc/$1/cmdline 2>/dev/null; echo .)
  found=${found%.}
  __a=$(printf '\001')
  __text=$2
  shift 2
  [ -n "$found" ] || return 1
  for __w in "$@"; do [ "$found" = "$__w" ] && return 0; done
  case $found in
    "sh$__a-c$__a"*"$__a""harness-proc$__a$__text$__a"*) return 0 ;;
  esac
  return 1
}
"""


def text_word(command: str) -> str:
    """``command`` as one argument of a command line read by :data:`CHECK_CMDLINE_SH`."""
    return command.replace("\n", "\x02")

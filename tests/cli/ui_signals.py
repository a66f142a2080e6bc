# ui_signals.py QWENCHAT MODEL HOME — the chat UI on a pseudo-terminal, run as a
# shell runs a job (its own foreground process group), ended or stopped by signals
# from outside: the terminal must come back as it was (termios, and the modes the UI
# turns on: alternate screen, bracketed paste, mouse reports) whether the program
# dies of the signal or stops on SIGTSTP, and the modes must come back on SIGCONT.
# Prints "ok: ..." or "FAIL: ..." lines; exit 1 on a failure.
import fcntl, os, re, select, signal, struct, sys, termios, time

QC, MODEL, HOME = sys.argv[1:4]
failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += not ok


def start(take_back=False):
    """The UI under a session leader (the "shell") that reports its wait statuses and,
    with take_back, takes the terminal back when the UI stops (as a shell does); the
    pty's slave stays open here, so its termios can be read after the program ends."""
    m, s = os.openpty()
    fcntl.ioctl(m, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    before = termios.tcgetattr(s)
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        fcntl.ioctl(s, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(s, fd)
        pid = os.fork()
        if pid == 0:
            # as a terminal's shell starts it: a signal ignored here (SIGQUIT and
            # SIGINT in a job started with & by a script) would stay ignored
            for sig in (signal.SIGQUIT, signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                        signal.SIGUSR1, signal.SIGALRM, signal.SIGSEGV, signal.SIGTSTP):
                signal.signal(sig, signal.SIG_DFL)
            os.setpgid(0, 0)
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            os.tcsetpgrp(0, os.getpid())
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            env = dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", LC_ALL="C.UTF-8",
                       HOME=HOME, XDG_STATE_HOME=HOME + "/state")
            os.execve(QC, [QC, "chat", "-m", MODEL, "--threads", "1", "--ctx", "512"], env)
        os.write(w, b"%d\n" % pid)
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        while True:
            _, st = os.waitpid(pid, os.WUNTRACED)
            if take_back and os.WIFSTOPPED(st):
                os.tcsetpgrp(0, os.getpgrp())
            os.write(w, b"%s\n" % (b"stopped" if os.WIFSTOPPED(st) else
                                   b"signal %d" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else
                                   b"exit %d" % os.WEXITSTATUS(st)))
            if not os.WIFSTOPPED(st):
                os._exit(0)
    os.close(w)
    return m, s, before, int(status_of(r, 0)), r


def status_of(rep, pid, t=30):
    """The next line the "shell" reports (a wait status), read a byte at a time; after
    t seconds without it, the program is killed (status "none")."""
    line, end = b"", time.time() + t
    while not line.endswith(b"\n"):
        if not select.select([rep], [], [], max(0, end - time.time()))[0]:
            if pid:
                os.kill(pid, signal.SIGKILL)
            return "none"
        c = os.read(rep, 1)
        if not c:
            return "none"
        line += c
    return line.decode().strip()


def read(m, out, until=None, t=30.0):
    """Output until `until` shows (or t seconds), else for t seconds."""
    end = time.time() + t
    while time.time() < end and (until is None or until not in out):
        if select.select([m], [], [], 0.05)[0]:
            try:
                out += os.read(m, 65536)
            except OSError:
                break
    return out


def modes_on(out):
    """The private modes the output left set (the cursor's own aside)."""
    st = {}
    for x in re.finditer(rb"\x1b\[\?([0-9;]+)([hl])", out):
        for p in x.group(1).split(b";"):
            st[p.decode()] = x.group(2) == b"h"
    return sorted(k for k, v in st.items() if v and k not in ("7", "25"))


def session_ends(sig, want):
    m, s, before, pid, rep = start()
    out = read(m, b"", b"Type a message")
    check(b"Type a message" in out, "%s: the UI is up" % sig.name)
    os.kill(pid, sig)
    status = status_of(rep, pid)
    out = read(m, out, t=0.5)
    check(status == want, "%s: %s (%s)" % (sig.name, want, status))
    left = modes_on(out)
    check(not left, "%s: no mode left on (%s)" % (sig.name, left or "none"))
    check(termios.tcgetattr(s) == before, "%s: the terminal's settings restored" % sig.name)
    os.close(m)
    os.close(s)


# a signal whose default action ends the program: it still does, the terminal back
# (a crash's SIGSEGV is the sanitizers' to report, under them)
crash = () if os.environ.get("QWENCHAT_SANITIZED") == "1" else (signal.SIGSEGV,)
for sig in (signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM) + crash:
    session_ends(sig, "signal %d" % sig)
session_ends(signal.SIGTERM, "exit 143")  # saves and quits

# SIGTSTP (kill -TSTP; in the UI Ctrl-Z is a key): stopped with the terminal given
# back, and on SIGCONT the UI's modes set again (the shell's prompt may have turned
# bracketed paste off)
m, s, before, pid, rep = start()
out = read(m, b"", b"Type a message")
os.kill(pid, signal.SIGTSTP)
status = status_of(rep, pid)
out = read(m, out, t=0.5)
check(status == "stopped", "SIGTSTP: stopped (%s)" % status)
left = modes_on(out)
check(not left, "SIGTSTP: no mode left on while stopped (%s)" % (left or "none"))
check(termios.tcgetattr(s) == before, "SIGTSTP: the terminal's settings restored while stopped")
cont = len(out)
os.killpg(pid, signal.SIGCONT)
out = read(m, out, t=1.0)
back = set(re.findall(rb"\x1b\[\?(\d+)h", out[cont:]))
missing = [x for x in ("1049", "2004", "1000", "1006") if x.encode() not in back]
check(not missing, "SIGCONT: the modes set again (missing: %s)" % (missing or "none"))
os.write(m, b"/quit\r")
status = status_of(rep, pid)
out = read(m, out, t=0.5)
check(status == "exit 0", "then /quit: exit 0 (%s)" % status)
check(not modes_on(out) and termios.tcgetattr(s) == before, "then /quit: the terminal restored")

# Stopped, its terminal taken back by the shell, then ended as `kill %1` does (the
# signal, then SIGCONT): continued in the background, it must die of the signal or
# leave on SIGTERM, not touch the shell's terminal and be stopped again (SIGTTOU).
for sig, want in ((signal.SIGTERM, "exit 143"), (signal.SIGUSR1, "signal %d" % signal.SIGUSR1)):
    m, s, before, pid, rep = start(take_back=True)
    out = read(m, b"", b"Type a message")
    os.kill(pid, signal.SIGTSTP)
    status = status_of(rep, pid)
    check(status == "stopped", "SIGTSTP, shell takes the terminal: stopped (%s)" % status)
    os.kill(pid, sig)
    os.killpg(pid, signal.SIGCONT)
    status = status_of(rep, pid)
    check(status == want, "then %s and SIGCONT in the background: %s (%s)" % (sig.name, want, status))
    if status == "stopped":
        os.kill(pid, signal.SIGKILL)
        status_of(rep, 0)
    os.close(m)
    os.close(s)
sys.exit(1 if failures else 0)

"""Progress: a line per item where the stream is not a terminal, a bar with notable lines above it where it is."""

import io

from mmcheck.reporting.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_count_every_item():
    out = io.StringIO()
    with Progress(2, "kernel", out) as progress:
        progress.start("a")
        progress.done("a: ok")
        progress.start("b")
        progress.done("b: FAIL", notable=True)
    assert out.getvalue() == "[1/2] a: ok\n[2/2] b: FAIL\n"


def test_on_a_terminal_only_notable_lines_are_printed_beside_the_bar():
    out = Terminal()
    with Progress(2, "kernel", out) as progress:
        progress.start("k.first float32")
        assert "k.first float32" in out.getvalue() and "0/2" in out.getvalue()
        progress.done("k.first float32: ok")
        progress.start("k.second float32")
        progress.done("k.second float32: FAIL (mismatch)", notable=True)
    text = out.getvalue()
    assert "k.second float32: FAIL (mismatch)\n" in text and "k.first float32: ok" not in text
    assert "1/2" in text  # the bar counted; it is cleared when done (leave=False)


def test_a_label_from_a_users_file_name_cannot_steer_the_terminal():
    """A submission named with an escape sequence (=x\x1b[2K.cu) is shown with it written out."""
    name = "sub\x1b[2K.cu hw.sgemm float32"
    plain = io.StringIO()
    with Progress(1, "kernel", plain) as progress:
        progress.start(name)
        progress.done(f"{name}: fail", notable=True)
    assert plain.getvalue() == "[1/1] sub\\x1b[2K.cu hw.sgemm float32: fail\n"
    terminal = Terminal()
    with Progress(1, "kernel", terminal) as progress:
        progress.start(name)
        progress.done(f"{name}: fail", notable=True)
    assert "sub\\x1b[2K.cu" in terminal.getvalue() and "\x1b[2K.cu" not in terminal.getvalue()

"""Compile the console font drawn in console/font.txt into a PSF2 file.

Usage: python3 -m tools.make.mkfont console/font.txt build/console/font.psf

font.txt holds one block per glyph: a header line `char 0xNN` (the byte the
glyph draws; the rest of the line is a free label) or `char replacement`,
then 16 rows of 8 characters, `#` for ink and `.` for background. Lines
starting with `;` are comments and blank lines are ignored.

The PSF2 file has 256 glyphs so that the glyph index is simply the byte
value; every byte without a glyph of its own gets the replacement glyph.
"""
import struct
import sys

WIDTH = 8
HEIGHT = 16
GLYPHS = 256
REQUIRED = range(0x20, 0x7F)  # printable ASCII

PSF2_MAGIC = b"\x72\xb5\x4a\x86"
PSF2_HEADER_SIZE = 32


class FontError(Exception):
    pass


def parse(path):
    """Return ({byte: [row bitmask, ...]}, replacement rows)."""
    glyphs = {}
    where = {}  # glyph key -> line of its header, for duplicate errors
    current = None  # (key, header line, rows)

    def finish():
        if current is None:
            return
        key, line, rows = current
        if len(rows) != HEIGHT:
            raise FontError("%s:%d: glyph %s has %d rows, not %d"
                            % (path, line, name(key), len(rows), HEIGHT))
        glyphs[key] = rows

    with open(path, encoding="ascii") as f:
        lines = f.read().splitlines()
    for number, text in enumerate(lines, 1):
        text = text.strip()
        if not text or text.startswith(";"):
            continue
        if text.startswith("char"):
            finish()
            key = parse_header(path, number, text)
            if key in where:
                raise FontError("%s:%d: glyph %s already drawn at line %d"
                                % (path, number, name(key), where[key]))
            where[key] = number
            current = (key, number, [])
            continue
        if current is None:
            raise FontError("%s:%d: pixel row before the first `char` line"
                            % (path, number))
        key, line, rows = current
        if len(text) != WIDTH or set(text) - set("#."):
            raise FontError("%s:%d: glyph %s: row %r is not %d of '#' and '.'"
                            % (path, number, name(key), text, WIDTH))
        if len(rows) == HEIGHT:
            raise FontError("%s:%d: glyph %s has more than %d rows"
                            % (path, number, name(key), HEIGHT))
        bits = 0
        for pixel in text:
            bits = bits << 1 | (pixel == "#")
        rows.append(bits)
    finish()

    missing = [c for c in REQUIRED if c not in glyphs]
    if missing:
        raise FontError("%s: no glyph for %s" % (
            path, ", ".join(name(c) for c in missing)))
    if "replacement" not in glyphs:
        raise FontError("%s: no `char replacement` glyph" % path)
    return glyphs, glyphs.pop("replacement")


def parse_header(path, number, text):
    words = text.split()
    if words[0] != "char" or len(words) < 2:
        raise FontError("%s:%d: expected `char 0xNN` or `char replacement`"
                        % (path, number))
    if words[1] == "replacement":
        return "replacement"
    try:
        code = int(words[1], 16)
    except ValueError:
        code = -1
    if not words[1].lower().startswith("0x") or not 0 <= code < GLYPHS:
        raise FontError("%s:%d: %r is not a byte in hex (0x00..0xff)"
                        % (path, number, words[1]))
    return code


def name(key):
    if key == "replacement":
        return "replacement"
    if 0x20 < key < 0x7F:
        return "0x%02x (%s)" % (key, chr(key))
    return "0x%02x" % key


def psf2(glyphs, replacement):
    # Header fields (all little-endian u32): magic, version, header size,
    # flags (0: no Unicode table), glyph count, bytes per glyph, height,
    # width.
    header = PSF2_MAGIC + struct.pack("<7I", 0, PSF2_HEADER_SIZE, 0, GLYPHS,
                                      HEIGHT * (WIDTH // 8), HEIGHT, WIDTH)
    body = b"".join(bytes(glyphs.get(c, replacement)) for c in range(GLYPHS))
    return header + body


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mkfont.py font.txt font.psf")
    try:
        glyphs, replacement = parse(sys.argv[1])
    except (FontError, OSError, UnicodeDecodeError) as e:
        sys.exit("mkfont: %s" % e)
    with open(sys.argv[2], "wb") as f:
        f.write(psf2(glyphs, replacement))


if __name__ == "__main__":
    main()

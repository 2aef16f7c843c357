"""Check that a QEMU screendump shows some text drawn in our console font.

Usage:
    python3 -m tools.test.check_screendump SCREEN.ppm FONT.psf TEXT
        exit 0 if TEXT appears on one line of the screen, else explain and
        exit 1 (2 for bad input files)
    python3 -m tools.test.check_screendump --list [--origin X,Y] SCREEN.ppm FONT.psf
        print the text read from each row of character cells

SCREEN.ppm is a binary PPM (P6), as QEMU's `screendump` monitor command
writes it; FONT.psf is the PSF2 font the kernel draws with
(build/console/font.psf).

Matching is exact, pixel for pixel, but colour blind: within a band of
text (one glyph high) the most common colour is the background and any
other colour is ink, so text of any colour on any plain background reads.
fbcon draws cell (col, row) at pixel (col * 8, row * 16), each font pixel
a square of scale x scale screen pixels (font_scale=, 1 to 3: cells of
16x32 and 24x48 on large screens); the search tries each scale, that grid
first, then every other vertical offset, and any horizontal position, so
text drawn by other means (a firmware or bootloader using our font at an
offset) is found too. --list reads the screen at scale 1.
"""
import argparse
import collections
import struct
import sys

PSF2_MAGIC = b"\x72\xb5\x4a\x86"

# --list shows these for cells that are the font's replacement glyph, and
# for cells with ink that match no glyph at all.
SHOW_REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
SHOW_UNKNOWN = "\N{MEDIUM SHADE}"


class InputError(Exception):
    pass


class Font:
    """A PSF2 font; each glyph as width * height bytes, 1 for ink."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < 32 or data[:4] != PSF2_MAGIC:
            raise InputError("%s: not a PSF2 font (bad magic)" % path)
        (_, header_size, _, count, charsize, height,
         width) = struct.unpack("<7I", data[4:32])
        row_bytes = (width + 7) // 8
        if (not count or not width or not height
                or charsize != row_bytes * height
                or header_size + count * charsize > len(data)):
            raise InputError("%s: inconsistent PSF2 header" % path)
        self.width, self.height, self.count = width, height, count
        self.glyphs = []
        for i in range(count):
            start = header_size + i * charsize
            pixels = bytearray()
            for y in range(height):
                row = data[start + y * row_bytes:start + (y + 1) * row_bytes]
                bits = int.from_bytes(row, "big")
                shift = row_bytes * 8 - 1
                pixels += bytes((bits >> (shift - x)) & 1
                                for x in range(width))
            self.glyphs.append(bytes(pixels))
        # What each distinct bitmap reads as; printable ASCII wins ties,
        # so the blank glyph reads as a space.
        self.reading = {}
        for c in range(0x20, min(0x7F, count)):
            self.reading.setdefault(self.glyphs[c], chr(c))
        for glyph in self.glyphs:
            self.reading.setdefault(glyph, SHOW_REPLACEMENT)

    def glyph(self, char):
        """The bitmap fbcon draws for a character (console/font.c rules)."""
        c = ord(char)
        if c > 0xFF:
            raise InputError("%r is not a byte the console can print" % char)
        if c >= self.count:
            c = ord("?") if ord("?") < self.count else 0
        return self.glyphs[c]

    def rows(self, text, scale=1):
        """text rendered as `height * scale` lines of 0/1 bytes, each font
        pixel scale pixels wide and high."""
        w = self.width
        glyphs = [self.glyph(c) for c in text]
        lines = [b"".join(g[y * w:(y + 1) * w] for g in glyphs)
                 for y in range(self.height)]
        wide = [bytes(b for b in line for _ in range(scale)) for line in lines]
        return [line for line in wide for _ in range(scale)]


class Screen:
    """A P6 PPM reduced to colour numbers: one byte per pixel."""

    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        fields, offset = ppm_header(path, data)
        self.width, self.height, maxval = fields
        samples = 3 * self.width * self.height
        if maxval > 255:
            # Two bytes per sample, big-endian: keep the high byte.
            pixels = data[offset:offset + 2 * samples][0::2]
        else:
            pixels = data[offset:offset + samples]
        if len(pixels) < samples:
            raise InputError("%s: truncated image data" % path)
        # Colours are numbered in order of appearance; past 255 distinct
        # colours (not a console screen anyway) the rest share number 255.
        palette = {}
        self.lines = []
        stride = 3 * self.width
        for y in range(self.height):
            row = pixels[y * stride:(y + 1) * stride]
            line = bytearray(self.width)
            for x, colour in enumerate(zip(row[0::3], row[1::3], row[2::3])):
                number = palette.get(colour)
                if number is None:
                    number = palette[colour] = min(len(palette), 255)
                line[x] = number
            self.lines.append(bytes(line))

    def ink(self, top, height):
        """Lines top..top+height-1 as 0/1 bytes, 1 where not background."""
        band = self.lines[top:top + height]
        counts = collections.Counter()
        for line in band:
            counts.update(line)
        background = counts.most_common(1)[0][0]
        table = bytes(0 if n == background else 1 for n in range(256))
        return [line.translate(table) for line in band]


def ppm_header(path, data):
    """((width, height, maxval), offset of the pixels) of a P6 file."""
    if data[:2] != b"P6":
        raise InputError("%s: not a binary PPM (P6) file" % path)
    fields = []
    i = 2
    while len(fields) < 3:
        while i < len(data) and data[i:i + 1].isspace():
            i += 1
        if data[i:i + 1] == b"#":
            while i < len(data) and data[i:i + 1] != b"\n":
                i += 1
            continue
        start = i
        while i < len(data) and data[i:i + 1].isdigit():
            i += 1
        if start == i:
            raise InputError("%s: malformed PPM header" % path)
        fields.append(int(data[start:i]))
    # Exactly one whitespace byte separates the header from the pixels.
    if not data[i:i + 1].isspace():
        raise InputError("%s: malformed PPM header" % path)
    width, height, maxval = fields
    if not width or not height or not 0 < maxval < 65536:
        raise InputError("%s: bad PPM size or maxval" % path)
    return fields, i + 1


# The font scales fbcon draws at (console/fbcon.c, font_scale=).
SCALES = (1, 2, 3)


def find_text(screen, font, text, scales=SCALES):
    """(x, y) of the top-left pixel of text on screen, drawn at one of
    these scales, or None."""
    for scale in scales:
        where = find_scaled(screen, font, text, scale)
        if where:
            return where
    return None


def find_scaled(screen, font, text, scale):
    """find_text for text drawn at one scale."""
    pattern = font.rows(text, scale)
    length, height = len(pattern[0]), len(pattern)
    # Look for the pattern line with the most ink first: fewest false hits.
    key = max(range(height), key=lambda y: pattern[y].count(1))
    for dy in range(height):
        for top in range(dy, screen.height - height + 1, height):
            ink = screen.ink(top, height)
            x = ink[key].find(pattern[key])
            while x >= 0:
                if all(ink[y][x:x + length] == pattern[y]
                       for y in range(height)):
                    return x, top
                x = ink[key].find(pattern[key], x + 1)
    return None


def read_grid(screen, font, dx, dy):
    """The text in each row of cells of the grid with origin (dx, dy), and
    how many cells with ink matched a glyph and how many did not."""
    w, h = font.width, font.height
    text, known, unknown = [], 0, 0
    for top in range(dy, screen.height - h + 1, h):
        ink = screen.ink(top, h)
        line = []
        for left in range(dx, screen.width - w + 1, w):
            cell = b"".join(row[left:left + w] for row in ink)
            char = font.reading.get(cell, SHOW_UNKNOWN)
            if char == SHOW_UNKNOWN:
                unknown += 1
            elif char != " ":
                known += 1
            line.append(char)
        text.append("".join(line).rstrip())
    while text and not text[-1]:
        text.pop()
    return text, known, unknown


def best_grid(screen, font):
    """(dx, dy, lines): fbcon's grid at (0, 0) if everything on it reads,
    else the origin at which the most cells read."""
    text, known, unknown = read_grid(screen, font, 0, 0)
    if known and not unknown:
        return 0, 0, text
    best = (known, -unknown, 0, 0, text)
    for dy in range(font.height):
        for dx in range(font.width):
            if (dx, dy) != (0, 0):
                text, known, unknown = read_grid(screen, font, dx, dy)
                best = max(best, (known, -unknown, dx, dy, text),
                           key=lambda b: b[:2])
    return best[2], best[3], best[4]


def show(lines, out):
    for line in lines:
        print(line, file=out)


def main():
    parser = argparse.ArgumentParser(
        description="Check that a QEMU screendump shows TEXT drawn in FONT.")
    parser.add_argument("--list", action="store_true",
                        help="print the text read from each row of cells")
    parser.add_argument("--origin", metavar="X,Y",
                        help="with --list: the pixel where the cell grid "
                        "starts (default: found automatically)")
    parser.add_argument("screen", help="binary PPM (P6), e.g. from QEMU")
    parser.add_argument("font", help="PSF2 font, e.g. build/console/font.psf")
    parser.add_argument("text", nargs="?", help="text to look for")
    args = parser.parse_args()
    if args.list == (args.text is not None):
        parser.error("give either TEXT or --list")
    # Non-ASCII markers must not crash output to a plain ASCII pipe.
    sys.stdout.reconfigure(errors="replace")
    sys.stderr.reconfigure(errors="replace")

    try:
        font = Font(args.font)
        screen = Screen(args.screen)
        if args.list:
            if args.origin:
                dx, dy = (int(v) for v in args.origin.split(","))
                lines = read_grid(screen, font, dx, dy)[0]
            else:
                dx, dy, lines = best_grid(screen, font)
            print("%s: %dx%d, cell grid at pixel (%d, %d)"
                  % (args.screen, screen.width, screen.height, dx, dy),
                  file=sys.stderr)
            show(lines, sys.stdout)
            return 0
        if not args.text or "\n" in args.text:
            parser.error("TEXT must be one non-empty line")
        where = find_text(screen, font, args.text)
    except (InputError, OSError, ValueError) as e:
        print("check-screendump: %s" % e, file=sys.stderr)
        return 2

    if where:
        x, y = where
        print("check-screendump: found %r at pixel (%d, %d)"
              % (args.text, x, y))
        return 0
    dx, dy, lines = best_grid(screen, font)
    print("check-screendump: %r is not on the screen %s (%dx%d, %dx%d "
          "font %s); the screen reads (cell grid at pixel (%d, %d)):"
          % (args.text, args.screen, screen.width, screen.height,
             font.width, font.height, args.font, dx, dy), file=sys.stderr)
    show(lines, sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

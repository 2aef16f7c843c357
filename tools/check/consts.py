"""Check that every %define in arch/consts.inc has the same value in
arch/consts.h, so the assembly and C sides of the kernel agree."""
import re
import sys


def values(path, pattern):
    found = {}
    with open(path) as f:
        for line in f:
            m = re.match(pattern, line)
            if m:
                text = re.sub(r"(?i)u?l*$", "", m.group(2))
                found[m.group(1)] = int(text, 0)
    return found


def main():
    asm = values("arch/consts.inc", r"^%define\s+(\w+)\s+(\w+)")
    c = values("arch/consts.h", r"^#define\s+(\w+)\s+(\w+)")
    bad = 0
    for name, value in sorted(asm.items()):
        if name not in c:
            print(f"check-consts: {name} is in consts.inc but not consts.h")
            bad += 1
        elif c[name] != value:
            print(f"check-consts: {name}: consts.inc {value:#x}, "
                  f"consts.h {c[name]:#x}")
            bad += 1
    if bad:
        sys.exit(1)
    print(f"check-consts: {len(asm)} constants agree")


if __name__ == "__main__":
    main()

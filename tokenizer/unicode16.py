#!/usr/bin/env python3
"""unicode16.py — writes tokenizer/unicode16.h: the general category of every letter,
mark, number and connector punctuation Unicode assigned in 15.1 and 16.0, which Hugging
Face tokenizers' pre-tokenizer regex knows (its \\p{L}, \\p{N} and \\w are Unicode
16.0's) and Debian 12's utf8proc (Unicode 15.0) calls unassigned.

    python3 tokenizer/unicode16.py UCD_DIR > tokenizer/unicode16.h

UCD_DIR holds DerivedAge.txt and DerivedGeneralCategory.txt of Unicode 16.0.0
(https://www.unicode.org/Public/16.0.0/ucd/, the second under extracted/)."""
import os
import re
import sys

AGES = {"15.1", "16.0"}
KEPT = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc"}
LINE = re.compile(r"^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*([0-9A-Za-z.]+)")


def ranges(path):
    """(first, last, value) of each data line of a UCD property file."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                lo = int(m.group(1), 16)
                yield lo, int(m.group(2) or m.group(1), 16), m.group(3)


def main():
    ucd = sys.argv[1]
    version = open(os.path.join(ucd, "DerivedAge.txt"), encoding="utf-8").readline()
    if "16.0.0" not in version:
        sys.exit("unicode16.py: %s: expected Unicode 16.0.0's DerivedAge.txt" % ucd)
    new = set()
    for lo, hi, age in ranges(os.path.join(ucd, "DerivedAge.txt")):
        if age in AGES:
            new.update(range(lo, hi + 1))
    cat = {}
    for lo, hi, gc in ranges(os.path.join(ucd, "extracted", "DerivedGeneralCategory.txt")):
        if gc in KEPT:
            for c in range(lo, hi + 1):
                if c in new:
                    cat[c] = gc
    runs = []  # [first, last, gc]
    for c in sorted(cat):
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == cat[c]:
            runs[-1][1] = c
        else:
            runs.append([c, c, cat[c]])
    print("/* unicode16.h — the general category of the letters, marks, numbers and connector")
    print(" * punctuation assigned in Unicode 15.1 and 16.0 (%d code points), sorted runs."
          % len(cat))
    print(" * Written by tokenizer/unicode16.py from Unicode 16.0.0's DerivedAge.txt and")
    print(" * DerivedGeneralCategory.txt; do not edit. */")
    print("#ifndef QWENCHAT_UNICODE16_H\n#define QWENCHAT_UNICODE16_H\n")
    print("#include <stdint.h>\n#include <utf8proc.h>\n")
    print("/* clang-format off */")
    print("static const struct unicode16_run {\n\tuint32_t first, last;\n\tuint8_t category;")
    print("} unicode16_runs[%d] = {" % len(runs))
    for lo, hi, gc in runs:
        print("\t{0x%X, 0x%X, UTF8PROC_CATEGORY_%s}," % (lo, hi, gc.upper()))
    print("};\n/* clang-format on */\n\n#endif")


main()

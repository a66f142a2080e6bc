#!/bin/sh
# unicode9.sh — writes tokenizer/unicode9.h, the code points assigned in Unicode 9.0
# (DerivedAge's Present_In=9.0, from perl's Unicode::UCD), which tokenizer/nfc.c needs
# to normalize as Hugging Face tokenizers does: its NFC tables are Unicode 9.0's
# (unicode-normalization-alignments), and a character assigned since is left as it is.
# Run from the top of the tree: sh tokenizer/unicode9.sh > tokenizer/unicode9.h
set -eu
perl -MUnicode::UCD=prop_invlist -e '
my @l = prop_invlist("Present_In=9.0");
print "/* unicode9.h — the code points assigned in Unicode 9.0 as an inversion list: c is\n";
print " * assigned when the number of entries <= c is odd. Written by tokenizer/unicode9.sh\n";
print " * (perl Unicode::UCD ", Unicode::UCD::UnicodeVersion(), ", Present_In=9.0); do not edit. */\n";
print "#ifndef QWENCHAT_UNICODE9_H\n#define QWENCHAT_UNICODE9_H\n\n#include <stdint.h>\n\n";
print "static const uint32_t unicode9_assigned[", scalar(@l), "] = {\n";
for (my $i = 0; $i < @l; $i += 8) {
	my $e = $i + 7 < $#l ? $i + 7 : $#l;
	print "\t", join(", ", map { sprintf("0x%x", $_) } @l[$i..$e]), ",\n";
}
print "};\n\n#endif\n";
'

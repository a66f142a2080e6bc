#!/bin/sh
# autogen.sh — generates ./configure from configure.ac (needs autoconf, automake, autoconf-archive).
exec autoreconf -fi "$(dirname "$0")"

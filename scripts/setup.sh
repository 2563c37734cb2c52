#!/usr/bin/env bash
# Create (or repair) refind's virtual environment. Idempotent; used by `make demo` and `make test`.
#  - pyserini is installed with --no-deps: refind needs only the Anserini/Lucene fatjar it ships,
#    not the torch/transformers/faiss stack its metadata declares (docs/install.md).
#  - tiktoken's o200k_base encoding is taken from the litellm wheel on PyPI (tiktoken itself would
#    download it from a host this machine cannot reach) and placed where refind points tiktoken.
set -euo pipefail
VENV=${1:-.venv}
PYTHON=${PYTHON:-python3}
start=$(date +%s)

if [ ! -x "$VENV/bin/python" ]; then
  echo "refind setup: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# (this machine's pip config names local mirrors that may be absent; that warning is noise)
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "${PIP[@]}" install --upgrade pip
quiet "${PIP[@]}" install -e ".[dev]"
# last, so pip's resolver has nothing to say about the dependencies pyserini declares but refind never imports
quiet "${PIP[@]}" install --no-deps "pyserini==1.6.0"

# The editable install resolves `refind` through an import hook that runs after the path search, so a
# folder named `refind` in the current directory (the clone itself, seen from its parent) would win as an
# empty namespace package ("module 'refind' has no attribute 'Memory'"). A regular package found anywhere
# on sys.path beats a namespace folder, so put one on it: a directory holding links to the packages only.
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
LINKS="$(cd "$VENV" && pwd)/share/refind/packages"
mkdir -p "$LINKS"
ln -sfn "$PWD/refind" "$LINKS/refind"
ln -sfn "$PWD/benchmarks" "$LINKS/benchmarks"
echo "$LINKS" > "$SITE/refind-packages.pth"

# tiktoken encoding, offline-safe (sha256 is verified by tiktoken when it loads the file).
TK_DIR="$VENV/share/refind/tiktoken"
TK_FILE="$TK_DIR/fb374d419588a4632f3f557e76b4b70aebbca790"
if [ ! -s "$TK_FILE" ]; then
  mkdir -p "$TK_DIR"
  tmp=$(mktemp -d)
  if quiet "${PIP[@]}" download --no-deps --only-binary=:all: -d "$tmp" litellm >/dev/null 2>&1; then
    "$VENV/bin/python" - "$tmp" "$TK_FILE" <<'PY'
import glob, hashlib, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/litellm-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist()
                if n.startswith("litellm/litellm_core_utils/tokenizers/") and n.endswith("fb374d419588a4632f3f557e76b4b70aebbca790"))
    data = z.read(name)
digest = hashlib.sha256(data).hexdigest()
if not digest.startswith("446a9538"):
    sys.exit(f"unexpected o200k_base digest {digest}")
open(sys.argv[2], "wb").write(data)
PY
  else
    echo "refind setup: could not fetch the tiktoken encoding; token counts will be estimated" >&2
  fi
  rm -rf "$tmp"
fi
# the local embedding model (refind.embed.local), built offline from the installed weights into the venv
"$VENV/bin/python" -m refind.embed.local install "$VENV/share/refind/models"

touch "$VENV/.refind-setup-done"
echo "refind setup: ready in $(( $(date +%s) - start )) s ($(du -sh "$VENV" | cut -f1))"

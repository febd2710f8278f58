#!/bin/sh
# Install the CPU build of torch (the version pinned in requirements.txt) into a virtual environment.
#   scripts/install_torch_cpu.sh .venv/bin/python
# Tries, in order, and stops at the first that gives a torch without CUDA:
#   0. the torch already installed, if it is the pinned version and a CPU build;
#   1. $TORCH_WHEEL, a local CPU wheel file you downloaded yourself;
#   2. torch==X+cpu from pip's configured indexes and find-links (a local wheel cache or mirror);
#   3. the PyTorch CPU index (https://download.pytorch.org/whl/cpu), where it is reachable;
#   4. the plain pin torch==X from PyPI: right on macOS and Windows (CPU wheels); on Linux PyPI's
#      wheel is the CUDA build, whose nvidia-* packages constraints-cpu.txt refuses, so pip stops.
# Then it checks `torch.version.cuda is None` and fails with a message otherwise.
set -u
PY=${1:-.venv/bin/python}
HERE=$(cd "$(dirname "$0")/.." && pwd)
VER=$(sed -n 's/^torch==\([0-9.]*\).*/\1/p' "$HERE/requirements.txt")
CONS="$HERE/constraints-cpu.txt"
PIP="$PY -m pip install -q -c $CONS"

cpu_torch_ok() {
    "$PY" - "$VER" <<'PYCODE' 2>/dev/null
import sys
import torch
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] and torch.version.cuda is None else 1)
PYCODE
}

if cpu_torch_ok; then echo "torch $VER (CPU) already installed"; exit 0; fi
if [ -n "${TORCH_WHEEL:-}" ]; then
    echo "installing torch from TORCH_WHEEL=$TORCH_WHEEL"
    $PIP "$TORCH_WHEEL" && cpu_torch_ok && exit 0
fi
echo "installing torch==$VER+cpu from the configured indexes"
$PIP "torch==$VER+cpu" 2>/dev/null && cpu_torch_ok && exit 0
echo "trying the PyTorch CPU index (download.pytorch.org)"
$PIP --timeout 15 --retries 1 --index-url https://download.pytorch.org/whl/cpu "torch==$VER+cpu" 2>/dev/null \
    && cpu_torch_ok && exit 0
echo "falling back to the plain pin torch==$VER (a CPU build on macOS/Windows; refused on Linux if it is CUDA)"
$PIP "torch==$VER" && cpu_torch_ok && exit 0

cat >&2 <<MSG
error: no CPU build of torch $VER could be installed, and Casebook will not install the CUDA build.
hint: download torch-$VER+cpu for your Python from https://download.pytorch.org/whl/cpu/torch/
      on a machine with network access, then run:  TORCH_WHEEL=/path/to/that.whl make setup
MSG
exit 1

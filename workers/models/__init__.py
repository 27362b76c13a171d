"""Provisioning models: the embedding model exported to ONNX (:mod:`.embedding`) and the local
llama.cpp server with its pinned, checksummed weights (:mod:`.llama_server`)."""

"""Sentence embeddings of tool texts: the shipped MiniLM model, run by ONNX Runtime in bulk (``onnx``) or by a
NumPy forward pass for a few texts (``minilm``), cached by text (``encoder.Embedder``), and embedded ahead of
the link stage while the pipeline extracts (``ahead``)."""

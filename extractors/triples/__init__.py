"""Triples out: a typed ``Manifest`` becomes RDF.

``structural`` states what a manifest says outright (servers, tools, parameters, declared dependencies);
``semantic`` runs a triple extractor (``offline`` rules by default, ``llm`` over an OpenAI-compatible endpoint)
whose typed output (``models``) the ontology constrains, and turns it into each tool's extraction graph.
"""

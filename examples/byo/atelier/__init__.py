"""atelier: a small team's own image-classification code, searched with recipesearch.

``nets`` (a ConvMixer factory), ``data`` (Fashion-MNIST read from its IDX files, and sklearn's digits for a
quick run) and ``tricks`` (random erasing as a recipesearch method). Nothing here is registered with
recipesearch: the recipes name each piece by import path, ``atelier.nets:convmixer`` and so on.
"""

"""The Chroma index: semantic recall over records whose truth lives in the store.

How vectors are laid out in Chroma, written through from the store, and removed from disk.
"""

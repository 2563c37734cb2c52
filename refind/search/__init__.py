"""One search round (filters → BM25 → session fusion → windows → read-set) and the per-question state."""

from refind.search.round import Fusion, fuse, search_round
from refind.search.session import SearchSession

__all__ = ["Fusion", "SearchSession", "fuse", "search_round"]

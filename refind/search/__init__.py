"""One search round (filters → BM25 → session fusion → windows → read-set) and the per-question state."""

from refind.search.round import search_round
from refind.search.session import SearchSession

__all__ = ["SearchSession", "search_round"]

package io.refind.lucene;

import org.apache.lucene.search.SearcherManager;

/**
 * What each class of the engine's concerns works on ({@link Engine} holds it and hands it over): the
 * searcher manager every read acquires a searcher from and releases it to, and the analysis of text.
 */
abstract class Searching {
  protected final SearcherManager manager;
  protected final Analysis analysis;

  Searching(SearcherManager manager, Analysis analysis) {
    this.manager = manager;
    this.analysis = analysis;
  }
}

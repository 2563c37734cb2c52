package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import org.apache.lucene.search.IndexSearcher;
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

  /** A read that writes its result as JSON ({@link #json}). */
  @FunctionalInterface
  interface JsonRead {
    void write(IndexSearcher searcher, JsonGenerator g) throws IOException;
  }

  /** What {@code read} writes with a searcher acquired for it (and released after), as a JSON string. */
  final String json(JsonRead read) throws IOException {
    IndexSearcher searcher = manager.acquire();
    StringWriter out = new StringWriter();
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      read.write(searcher, g);
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }
}

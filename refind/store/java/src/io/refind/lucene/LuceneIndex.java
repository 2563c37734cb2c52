package io.refind.lucene;

import java.io.Closeable;
import java.io.IOException;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.SearcherFactory;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.store.Directory;

/**
 * A Lucene index open for reading or for writing, as {@link Engine} opens the messages' and {@link Vectors}
 * the vectors': its directory, its writer (null when read-only) and the searcher manager reads acquire from.
 */
final class LuceneIndex implements Closeable {
  final Directory directory;
  final IndexWriter writer; // null when read-only
  final SearcherManager manager;

  /**
   * Opens the index in {@code directory}: read-only when {@code config} is null, else written with {@code
   * config}. {@code factory} makes its searchers (null: Lucene's). The directory is closed when the index
   * cannot be opened.
   */
  LuceneIndex(Directory directory, IndexWriterConfig config, SearcherFactory factory) throws IOException {
    this.directory = directory;
    try {
      if (config == null) {
        this.writer = null;
        this.manager = new SearcherManager(directory, factory);
      } else {
        this.writer = new IndexWriter(directory, config);
        if (!DirectoryReader.indexExists(directory)) {
          writer.commit(); // an empty but valid index, so read-only openers find one
        }
        this.manager = new SearcherManager(writer, factory);
      }
    } catch (IOException | RuntimeException e) {
      directory.close();
      throw e;
    }
  }

  /** Closes the searcher manager, the writer (what was not committed is dropped) and the directory. */
  @Override
  public void close() throws IOException {
    try {
      manager.close();
      if (writer != null) {
        writer.close();
      }
    } finally {
      directory.close();
    }
  }
}

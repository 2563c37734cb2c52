package io.refind.lucene;

import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.search.SearcherManager;

/**
 * What each class that writes the messages' index works on besides a read's ({@link Searching}): the writer
 * (null when read-only), the write lock every write and commit holds, and the reusable message document
 * (filled under that lock).
 */
abstract class Writing extends Searching {
  protected final IndexWriter writer;
  protected final Object writeLock;
  protected final Documents.MessageDoc doc;

  Writing(SearcherManager manager, IndexWriter writer, Object writeLock, Analysis analysis, Documents.MessageDoc doc) {
    super(manager, analysis);
    this.writer = writer;
    this.writeLock = writeLock;
    this.doc = doc;
  }
}

package io.refind.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Closeable;
import java.io.IOException;
import java.util.List;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.util.BytesRef;

/**
 * The messages' side of the vectors ({@link Vectors} is the vector index): what a vector is checked against
 * (the stored message, as of the last commit), the filtered KNN, the queue's reads and the vectors' writes
 * under the write lock, and the queueing of every stored message (an index from before vectors, or a new
 * model). The caller ({@link Engine}) checks the engine is writable for the writes.
 */
final class MessageVectors {
  private final SearcherManager manager;
  private final Object writeLock;
  private final Vectors vectors; // null: read-only over an index from before vectors (none yet)
  private final Reads reads;

  MessageVectors(SearcherManager manager, Object writeLock, Vectors vectors, Reads reads) {
    this.manager = manager;
    this.writeLock = writeLock;
    this.vectors = vectors;
    this.reads = reads;
  }

  /** The stored messages by key (user SEP id), as of the last commit (one searcher, released on close). */
  private static final class Lookup implements Vectors.MessageLookup, Closeable {
    private final SearcherManager manager;
    private final IndexSearcher searcher;

    Lookup(SearcherManager manager) throws IOException {
      this.manager = manager;
      this.searcher = manager.acquire();
    }

    /** Whether a live document has this key (a term seek per segment, no query). */
    boolean stored(String key) {
      try {
        BytesRef term = new BytesRef(key);
        for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
          Terms terms = leaf.reader().terms("key");
          if (terms == null) {
            continue;
          }
          TermsEnum te = terms.iterator();
          if (!te.seekExact(term)) {
            continue;
          }
          org.apache.lucene.index.PostingsEnum pe = te.postings(null, org.apache.lucene.index.PostingsEnum.NONE);
          org.apache.lucene.util.Bits live = leaf.reader().getLiveDocs();
          for (int d = pe.nextDoc(); d != org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS; d = pe.nextDoc()) {
            if (live == null || live.get(d)) {
              return true;
            }
          }
        }
        return false;
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    private Document doc(String key) throws IOException {
      TopDocs top = searcher.search(new TermQuery(new Term("key", key)), 1);
      return top.scoreDocs.length == 0 ? null : searcher.storedFields().document(top.scoreDocs[0].doc);
    }

    @Override
    public Vectors.Stored find(String key) throws IOException {
      Document d = doc(key);
      if (d == null || d.get("raw") == null) {
        return null;
      }
      JsonNode raw = Wire.MAPPER.readTree(d.get("raw"));
      String content = raw.get("content").asText();
      return new Vectors.Stored(
          Vectors.token(content), raw.get("session_id").asText(), raw.get("turn").asInt(), raw.get("ts").asLong(),
          raw.get("role").asText(), content);
    }

    @Override
    public void close() throws IOException {
      manager.release(searcher);
    }
  }

  /**
   * The k nearest of {@code user}'s vectors to {@code vector} within {@code filters} (JSON, as {@link
   * Engine#search} takes them, without any_terms): a JSON list of hits without content, best first.
   */
  byte[] knn(String user, float[] vector, int k, String filters) throws IOException {
    if (vectors == null || k <= 0) {
      return Wire.emptyList();
    }
    JsonNode f = Queries.filters(filters);
    try (Lookup messages = new Lookup(manager)) {
      return vectors.knn(user, vector, k, f, messages::stored);
    }
  }

  /**
   * The {@code vector_counts} of {@code user} (null: everyone). {@code implicit}: the index has no model
   * recorded, so its queue is implicit (every message without a vector awaits one; the caller knows, a
   * reader too, from the index's metadata).
   */
  String vectorCounts(String user, boolean implicit) throws IOException {
    if (vectors == null) {
      return Wire.vectorCounts(0, reads.count(user)); // an index from before vectors: every message awaits one
    }
    long[] c = vectors.counts(user);
    if (implicit) {
      return Wire.vectorCounts(c[0], Math.max(0, reads.count(user) - c[0]));
    }
    return Wire.vectorCounts(c[0], c[1]);
  }

  /** Up to {@code limit} messages awaiting their vector, oldest write first: a JSON list of {@code pending}. */
  byte[] pendingVectors(int limit) throws IOException {
    synchronized (writeLock) {
      if (!vectors.queueing) {
        return implicitPending(limit);
      }
      try (Lookup messages = new Lookup(manager)) {
        return vectors.pending(limit, messages);
      }
    }
  }

  /**
   * The implicit queue of an index without a model: its first {@code limit} stored messages (as of the last
   * commit) in index order, which is write order (the messages' index merges adjacent segments only, and a
   * replaced message is written anew at the end), as {@link #pendingVectors} gives them.
   */
  private byte[] implicitPending(int limit) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    IndexSearcher searcher = manager.acquire();
    try (com.fasterxml.jackson.core.JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartArray();
      List<Integer> docs = Queries.allDocs(searcher, new TermQuery(new Term("kind", "m")));
      Hits.Fields m = new Hits.Fields(searcher);
      org.apache.lucene.index.StoredFields stored = searcher.storedFields();
      for (int global : docs.subList(0, Math.min(limit, docs.size()))) {
        m.to(global);
        String raw = stored.document(global).get("raw");
        if (raw == null) {
          continue;
        }
        String content = Wire.MAPPER.readTree(raw).get("content").asText();
        Wire.pending(g, m.user.text(), m.id.text(), Vectors.token(content), content);
      }
      g.writeEndArray();
    } finally {
      manager.release(searcher);
    }
    return out.toByteArray();
  }

  /**
   * A model was recorded: queue every stored message and queue each write from now on, durably. Under the
   * write lock, what was written is committed first, so that the queue holds every message; the caller
   * records the model after this returns (a crash between leaves the index without a model, queue implicit).
   * Returns how many messages were queued.
   */
  long startQueueing(Writes writes) throws IOException {
    synchronized (writeLock) {
      if (vectors.queueing) {
        return 0;
      }
      writes.commit();
      long n = queueAll(false);
      vectors.queueing = true;
      writes.commit();
      return n;
    }
  }

  /** Sets whether writes are queued ({@link Engine#setQueueing}). */
  void setQueueing(boolean on) {
    synchronized (writeLock) {
      vectors.queueing = on;
    }
  }

  /** Writes vectors (a JSON list of {@code vector} records; not committed); returns how many were written. */
  int writeVectors(byte[] records) throws IOException {
    JsonNode r = Wire.MAPPER.readTree(records);
    synchronized (writeLock) {
      try (Lookup messages = new Lookup(manager)) {
        return vectors.write(r, messages);
      }
    }
  }

  /**
   * Queues every stored message (not committed): an index written before vectors, or {@code drop} (every
   * vector deleted first: a new model). Returns how many were queued.
   */
  long queueAll(boolean drop) throws IOException {
    long n = 0;
    synchronized (writeLock) {
      if (drop) {
        vectors.deleteAll();
      }
      IndexSearcher searcher = manager.acquire();
      try {
        List<Integer> docs = Queries.allDocs(searcher, new TermQuery(new Term("kind", "m")));
        Hits.Fields m = new Hits.Fields(searcher);
        for (int global : docs) {
          m.to(global);
          vectors.enqueue(m.user.text(), m.id.text(), m.session.text());
          n++;
        }
      } finally {
        manager.release(searcher);
      }
    }
    return n;
  }
}

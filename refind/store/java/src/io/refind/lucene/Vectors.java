package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.lucene99.Lucene99Codec;
import org.apache.lucene.codecs.lucene99.Lucene99HnswVectorsFormat;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.ConcurrentMergeScheduler;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.KnnFloatVectorQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermInSetQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.BytesRef;

/**
 * The vectors of a refind index and the queue of messages awaiting theirs (issue 36): a Lucene index of its
 * own beside the messages' (the folder "vectors" in the index directory), written by {@link Engine} under
 * its write lock and committed before the messages' index by {@link Engine#commit}.
 *
 * <p>Why an index of its own: the messages' index merges in the writing thread so that its segments, and
 * BM25's statistics, follow from the writes alone; a vector written by the background worker would change
 * them (and its HNSW graph would make those merges long, under the lock every add waits for). Here merges
 * run on a background thread (ConcurrentMergeScheduler): an add never waits for a graph to be merged.
 *
 * <p>Documents: kind "v", one per message with a vector: "v_key" (user U+001F id), "v_user", the fields a
 * filter reads ("v_session", "v_ts", "v_role") and a hit shows ("v_id", "v_turn"), the token of the content
 * it was made from ("v_token") and the vector itself ("vector", dot product of unit vectors); kind "p", one
 * per message awaiting its vector: "p_key", "p_user", "p_session", in write order. Neither carries
 * "user_id" or "contents": nothing here is seen by a message query.
 *
 * <p>The queue is written only while the index has a model recorded ({@link #queueing}): before that no
 * vector can be written, every stored message awaits one, and a write here per message would be a second
 * index's work (and a second fsync per add) for nothing. {@link MessageVectors#startQueueing} queues every
 * stored message when a model is recorded; until then the queue is implicit ({@link MessageVectors}).
 *
 * <p>Consistency: a message write queues it in the same call (kind "p"), and this index commits first, so
 * a crash leaves no acknowledged message unqueued (at worst a queue entry whose message never landed,
 * which {@link #pending} drops). A vector is written only for a message unchanged since the last commit
 * and whose content still has the vector's token. Deletions remove both kinds of document by key, user or
 * session; {@link #knn} checks each hit's message is still stored, so a crash between the two indexes'
 * commits of a deletion never shows a deleted message.
 */
final class Vectors implements Closeable {
  static final String SEP = "\u001f";
  /** Keys written to the message index since the last commit, past which a vector is not written. */
  private static final int MAX_WRITTEN = 1_000_000;

  private final LuceneIndex index; // its writer null when read-only
  private final Set<String> written = new HashSet<>(); // message keys written since the last commit
  private boolean overflow; // more than MAX_WRITTEN: no vector is written until the next commit
  /**
   * Whether message writes are queued here: the index has a model recorded (set by {@link MessageVectors}
   * under the write lock). Off, a message write touches nothing here: there is no vector to keep or drop
   * (none is written without a model, and {@link #deleteAll} dropped any before one is forgotten).
   */
  volatile boolean queueing;
  private final Document pdoc = new Document();
  private final StringField pKey = new StringField("p_key", "", Field.Store.YES);
  private final StringField pUser = new StringField("p_user", "", Field.Store.NO);
  private final StringField pSession = new StringField("p_session", "", Field.Store.NO);

  private Vectors(Directory directory, boolean readOnly) throws IOException {
    pdoc.add(new StringField("kind", "p", Field.Store.NO));
    pdoc.add(pKey);
    pdoc.add(pUser);
    pdoc.add(pSession);
    IndexWriterConfig config = null;
    if (!readOnly) {
      config = new IndexWriterConfig();
      config.setOpenMode(IndexWriterConfig.OpenMode.CREATE_OR_APPEND);
      config.setCodec(new WideVectorsCodec());
      config.setMergeScheduler(new ConcurrentMergeScheduler()); // graphs merge off the writing thread
      config.setCommitOnClose(false);
      config.setRAMBufferSizeMB(64);
    }
    index = new LuceneIndex(directory, config, null);
  }

  /**
   * The vector index in {@code folder} (null: in memory), or null when it is read-only and there is none
   * (an index written before vectors, not yet opened for writing).
   */
  static Vectors open(Path folder, boolean readOnly) throws IOException {
    if (folder == null) {
      return new Vectors(new ByteBuffersDirectory(), readOnly);
    }
    if (readOnly && !Files.isDirectory(folder)) {
      return null;
    }
    Directory d = FSDirectory.open(folder);
    if (readOnly && !DirectoryReader.indexExists(d)) {
      d.close();
      return null;
    }
    return new Vectors(d, readOnly);
  }

  /** The codec of the vector index: Lucene's, taking vectors of up to 4,096 dimensions (Lucene's default
   * cap is 1,024; embedding endpoints give up to 3,072). The format written is Lucene99's own. */
  private static final class WideVectorsCodec extends Lucene99Codec {
    private final KnnVectorsFormat wide = new WideHnsw();

    @Override
    public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
      return wide;
    }
  }

  private static final class WideHnsw extends KnnVectorsFormat {
    private final KnnVectorsFormat hnsw = new Lucene99HnswVectorsFormat();

    WideHnsw() {
      super("Lucene99HnswVectorsFormat"); // what is written, and read back by Lucene's own format
    }

    @Override
    public KnnVectorsWriter fieldsWriter(SegmentWriteState state) throws IOException {
      return hnsw.fieldsWriter(state);
    }

    @Override
    public KnnVectorsReader fieldsReader(SegmentReadState state) throws IOException {
      return hnsw.fieldsReader(state);
    }

    @Override
    public int getMaxDimensions(String fieldName) {
      return 4096;
    }
  }

  /** A message's vector token: the first 32 hex digits of the SHA-256 of its UTF-8 content (refind.store.base.content_token). */
  static String token(String content) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(content.getBytes(StandardCharsets.UTF_8));
      StringBuilder b = new StringBuilder(32);
      for (int i = 0; i < 16; i++) {
        b.append(Character.forDigit((d[i] >> 4) & 0xf, 16)).append(Character.forDigit(d[i] & 0xf, 16));
      }
      return b.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  // ------------------------------------------------------------------------------------------ writes
  // (the caller, Engine, holds its write lock)

  /**
   * A message was written ({@code replace}: over one of the same id): it keeps its vector when its content
   * has the token of the stored vector (the vector document is written again with the message's new
   * fields), else it loses it and joins the end of the queue.
   */
  void onMessage(String user, String id, String session, int turn, long ts, String role, String content, boolean replace)
      throws IOException {
    if (!queueing) {
      return; // no model: the queue is implicit, and no message has a vector
    }
    String key = user + SEP + id;
    markWritten(key);
    if (replace) {
      String token = token(content); // only a replacement can keep a vector: a new message has none
      float[] kept = storedVector(key, token);
      if (kept != null) {
        index.writer.updateDocument(new Term("v_key", key), vectorDoc(key, user, id, session, turn, ts, role, token, kept));
        index.writer.deleteDocuments(new Term("p_key", key));
        return;
      }
      index.writer.deleteDocuments(new Term("v_key", key));
      queue(key, user, session, true);
    } else {
      queue(key, user, session, false);
    }
  }

  private void markWritten(String key) {
    if (!overflow) {
      written.add(key);
      if (written.size() > MAX_WRITTEN) {
        written.clear();
        overflow = true;
      }
    }
  }

  private void queue(String key, String user, String session, boolean replace) throws IOException {
    pKey.setStringValue(key);
    pUser.setStringValue(user);
    pSession.setStringValue(session);
    if (replace) {
      index.writer.updateDocument(new Term("p_key", key), pdoc);
    } else {
      index.writer.addDocument(pdoc);
    }
  }

  /** The committed vector of {@code key} when it was made from content with {@code token}, else null. */
  private float[] storedVector(String key, String token) throws IOException {
    IndexSearcher searcher = index.manager.acquire();
    try {
      for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
        int d = liveDoc(leaf, "v_key", key);
        if (d < 0) {
          continue;
        }
        if (!token.equals(leaf.reader().storedFields().document(d).get("v_token"))) {
          return null;
        }
        FloatVectorValues values = leaf.reader().getFloatVectorValues("vector");
        if (values == null || values.advance(d) != d) {
          return null;
        }
        return values.vectorValue().clone();
      }
      return null;
    } finally {
      index.manager.release(searcher);
    }
  }

  /** The live document of {@code field:value} in one segment, or -1. */
  private static int liveDoc(LeafReaderContext leaf, String field, String value) throws IOException {
    Terms terms = leaf.reader().terms(field);
    if (terms == null) {
      return -1;
    }
    TermsEnum te = terms.iterator();
    if (!te.seekExact(new BytesRef(value))) {
      return -1;
    }
    PostingsEnum pe = te.postings(null, PostingsEnum.NONE);
    Bits live = leaf.reader().getLiveDocs();
    for (int d = pe.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = pe.nextDoc()) {
      if (live == null || live.get(d)) {
        return d;
      }
    }
    return -1;
  }

  private static Document vectorDoc(
      String key, String user, String id, String session, int turn, long ts, String role, String token, float[] v) {
    Document d = new Document();
    d.add(new StringField("kind", "v", Field.Store.NO));
    d.add(new StringField("v_key", key, Field.Store.NO));
    d.add(new StringField("v_user", user, Field.Store.NO));
    d.add(new BinaryDocValuesField("v_id", new BytesRef(id)));
    d.add(new StringField("v_session", session, Field.Store.NO));
    d.add(new SortedDocValuesField("v_session", new BytesRef(session)));
    d.add(new NumericDocValuesField("v_turn", turn));
    d.add(new LongPoint("v_ts", ts));
    d.add(new NumericDocValuesField("v_ts", ts));
    d.add(new StringField("v_role", role, Field.Store.NO));
    d.add(new SortedDocValuesField("v_role", new BytesRef(role)));
    d.add(new StoredField("v_token", token));
    d.add(new KnnFloatVectorField("vector", v, VectorSimilarityFunction.DOT_PRODUCT));
    return d;
  }

  /** Messages deleted by key (retention): their vectors and queue entries go too. */
  void deleteKeys(Collection<String> keys) throws IOException {
    List<BytesRef> refs = new ArrayList<>(keys.size());
    for (String k : keys) {
      refs.add(new BytesRef(k));
      markWritten(k);
    }
    if (!refs.isEmpty()) {
      index.writer.deleteDocuments(new TermInSetQuery("v_key", refs), new TermInSetQuery("p_key", refs));
    }
  }

  void deleteUser(String user) throws IOException {
    index.writer.deleteDocuments(new Term("v_user", user), new Term("p_user", user));
  }

  void deleteSession(String user, String sid) throws IOException {
    BooleanQuery.Builder v = new BooleanQuery.Builder();
    v.add(new TermQuery(new Term("v_user", user)), Occur.FILTER);
    v.add(new TermQuery(new Term("v_session", sid)), Occur.FILTER);
    BooleanQuery.Builder p = new BooleanQuery.Builder();
    p.add(new TermQuery(new Term("p_user", user)), Occur.FILTER);
    p.add(new TermQuery(new Term("p_session", sid)), Occur.FILTER);
    index.writer.deleteDocuments(v.build(), p.build());
  }

  /** Every vector dropped (a new model): the caller queues every message again. */
  void deleteAll() throws IOException {
    index.writer.deleteAll();
    written.clear();
    overflow = true; // a vector read from the queue before this is not written
  }

  /** Queue a message (an index from before vectors, or after {@link #deleteAll}). */
  void enqueue(String user, String id, String session) throws IOException {
    String key = user + SEP + id;
    pKey.setStringValue(key);
    pUser.setStringValue(user);
    pSession.setStringValue(session);
    index.writer.updateDocument(new Term("p_key", key), pdoc);
  }

  /** Commits this index (before the messages' index commits) and makes it visible to searches. */
  void commit() throws IOException {
    index.writer.commit();
    index.manager.maybeRefreshBlocking();
  }

  /** After the messages' index committed and refreshed: what was written is settled. */
  void settled() {
    written.clear();
    overflow = false;
  }

  void refresh() throws IOException {
    index.manager.maybeRefresh();
  }

  /**
   * Writes the vectors of {@code records} (a JSON list of {@code vector} records: {@link Wire}) whose message
   * is stored, unchanged since the last commit, with content of that token ({@code messages} reads it);
   * returns how many.
   */
  int write(JsonNode records, MessageLookup messages) throws IOException {
    int n = 0;
    for (JsonNode node : records) {
      Wire.Vector r = Wire.vector(node);
      String user = r.user();
      String id = r.id();
      String token = r.token();
      String key = user + SEP + id;
      if (overflow || written.contains(key)) {
        continue; // written since the last commit: its stored fields may not be its own yet
      }
      Stored m = messages.find(key);
      if (m == null || !token.equals(m.token())) {
        continue;
      }
      index.writer.updateDocument(
          new Term("v_key", key),
          vectorDoc(key, user, id, m.session(), m.turn(), m.ts(), m.role(), token, r.floats()));
      index.writer.deleteDocuments(new Term("p_key", key));
      n++;
    }
    return n;
  }

  /** What {@link #write} and {@link #pending} need of a stored message: the token of its content, and more. */
  record Stored(String token, String session, int turn, long ts, String role, String content) {}

  /** The stored messages (as of the last commit). */
  interface MessageLookup {
    /** The message with {@code key}, or null. */
    Stored find(String key) throws IOException;
  }

  /**
   * Up to {@code limit} queued messages, oldest write first: a JSON list of {@code pending} records. A queue
   * entry whose message is not stored (it never landed, or a crash came between two commits) is dropped,
   * as is one whose message already has the vector of its content.
   */
  byte[] pending(int limit, MessageLookup messages) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    IndexSearcher searcher = index.manager.acquire();
    List<String> stale = new ArrayList<>();
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartArray();
      int n = 0;
      outer:
      for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
        Terms terms = leaf.reader().terms("kind");
        if (terms == null) {
          continue;
        }
        TermsEnum te = terms.iterator();
        if (!te.seekExact(new BytesRef("p"))) {
          continue;
        }
        PostingsEnum pe = te.postings(null, PostingsEnum.NONE);
        Bits live = leaf.reader().getLiveDocs();
        org.apache.lucene.index.StoredFields stored = leaf.reader().storedFields();
        for (int d = pe.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = pe.nextDoc()) {
          if (live != null && !live.get(d)) {
            continue;
          }
          String key = stored.document(d).get("p_key");
          if (written.contains(key)) {
            continue; // its message is not committed yet
          }
          Stored m = messages.find(key);
          if (m == null || hasVector(searcher, key, m.token())) {
            stale.add(key);
            continue;
          }
          String[] parts = key.split(SEP, 2);
          Wire.pending(g, parts[0], parts[1], m.token(), m.content());
          if (++n >= limit) {
            break outer;
          }
        }
      }
      g.writeEndArray();
    } finally {
      index.manager.release(searcher);
    }
    if (index.writer != null && !overflow) {
      for (String key : stale) {
        index.writer.deleteDocuments(new Term("p_key", key)); // committed with the next commit
      }
    }
    return out.toByteArray();
  }

  private static boolean hasVector(IndexSearcher searcher, String key, String token) throws IOException {
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      int d = liveDoc(leaf, "v_key", key);
      if (d >= 0) {
        return token.equals(leaf.reader().storedFields().document(d).get("v_token"));
      }
    }
    return false;
  }

  /** [vectors, pending] of {@code user}, or of everyone when null. */
  long[] counts(String user) throws IOException {
    IndexSearcher searcher = index.manager.acquire();
    try {
      Query v = user == null ? new TermQuery(new Term("kind", "v")) : new TermQuery(new Term("v_user", user));
      Query p = user == null ? new TermQuery(new Term("kind", "p")) : new TermQuery(new Term("p_user", user));
      return new long[] {searcher.count(v), searcher.count(p)};
    } finally {
      index.manager.release(searcher);
    }
  }

  /**
   * The k nearest of {@code user}'s vectors to {@code q} within {@code f} (JSON filters, or null): the user
   * and the filters are the KNN query's filter, applied inside the graph search before the top k. Hits as
   * JSON [{id, session_id, turn, ts, role, score (the cosine)}], best first; those whose message is not
   * stored ({@code stored} says) are left out.
   */
  byte[] knn(String user, float[] q, int k, JsonNode f, java.util.function.Predicate<String> stored)
      throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("v_user", user)), Occur.FILTER);
    if (f != null && !f.isNull()) {
      Queries.timeRange(b, f, "v_ts");
      if (f.hasNonNull("session_ids")) {
        b.add(set("v_session", f.get("session_ids"), false, null), Occur.FILTER);
      }
      if (f.hasNonNull("roles")) {
        b.add(set("v_role", f.get("roles"), true, null), Occur.FILTER);
      }
      if (f.hasNonNull("exclude_ids") && f.get("exclude_ids").size() > 0) {
        b.add(set("v_key", f.get("exclude_ids"), false, user + SEP), Occur.MUST_NOT);
      }
      if (f.hasNonNull("exclude_sessions") && f.get("exclude_sessions").size() > 0) {
        b.add(set("v_session", f.get("exclude_sessions"), false, null), Occur.MUST_NOT);
      }
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    IndexSearcher searcher = index.manager.acquire();
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartArray();
      if (k > 0) {
        Query filter = b.build();
        // a person's few vectors are compared one by one (exact, and faster than a graph search that
        // would step through everyone else's); many are searched in the HNSW graph, the filter inside
        TopDocs top = searcher.count(filter) <= exactMax
            ? exact(searcher, q, k, filter)
            : searcher.search(new KnnFloatVectorQuery("vector", q, k, filter), k);
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        for (ScoreDoc sd : top.scoreDocs) {
          LeafReaderContext leaf = leaves.get(org.apache.lucene.index.ReaderUtil.subIndex(sd.doc, leaves));
          int d = sd.doc - leaf.docBase;
          BinaryDocValues ids = DocValues.getBinary(leaf.reader(), "v_id");
          SortedDocValues sessions = DocValues.getSorted(leaf.reader(), "v_session");
          SortedDocValues roles = DocValues.getSorted(leaf.reader(), "v_role");
          NumericDocValues turns = DocValues.getNumeric(leaf.reader(), "v_turn");
          NumericDocValues times = DocValues.getNumeric(leaf.reader(), "v_ts");
          String id = ids.advanceExact(d) ? ids.binaryValue().utf8ToString() : "";
          if (!stored.test(user + SEP + id)) {
            continue;
          }
          g.writeStartObject();
          g.writeStringField("id", id);
          g.writeStringField(
              "session_id", sessions.advanceExact(d) ? sessions.lookupOrd(sessions.ordValue()).utf8ToString() : "");
          g.writeNumberField("turn", turns.advanceExact(d) ? (int) turns.longValue() : 0);
          g.writeNumberField("ts", times.advanceExact(d) ? times.longValue() : 0L);
          g.writeStringField("role", roles.advanceExact(d) ? roles.lookupOrd(roles.ordValue()).utf8ToString() : "");
          g.writeNumberField("score", 2.0f * sd.score - 1.0f); // DOT_PRODUCT scores (1 + cos) / 2
          g.writeEndObject();
        }
      }
      g.writeEndArray();
    } finally {
      index.manager.release(searcher);
    }
    return out.toByteArray();
  }

  /** Vectors admitted by a KNN's filter up to which they are compared one by one instead of searched in the graph. */
  static volatile int exactMax = 20_000;

  /**
   * The k vectors nearest {@code q} among the documents {@code filter} admits, compared one by one: scores
   * as the graph search gives them ((1 + dot) / 2), ties by document.
   */
  private static TopDocs exact(IndexSearcher searcher, float[] q, int k, Query filter) throws IOException {
    org.apache.lucene.search.Weight w =
        searcher.createWeight(searcher.rewrite(filter), org.apache.lucene.search.ScoreMode.COMPLETE_NO_SCORES, 1f);
    java.util.PriorityQueue<ScoreDoc> best =
        new java.util.PriorityQueue<>(k + 1, (a, c) -> a.score != c.score ? Float.compare(a.score, c.score) : Integer.compare(c.doc, a.doc));
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      FloatVectorValues values = leaf.reader().getFloatVectorValues("vector");
      org.apache.lucene.search.Scorer scorer = values == null ? null : w.scorer(leaf);
      if (scorer == null) {
        continue;
      }
      Bits live = leaf.reader().getLiveDocs();
      DocIdSetIterator it = scorer.iterator();
      for (int d = it.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = it.nextDoc()) {
        if (live != null && !live.get(d)) {
          continue;
        }
        int at = values.docID() < d ? values.advance(d) : values.docID();
        if (at != d) {
          continue; // no vector (cannot happen: every "v" document has one)
        }
        float score = VectorSimilarityFunction.DOT_PRODUCT.compare(q, values.vectorValue());
        best.add(new ScoreDoc(leaf.docBase + d, score));
        if (best.size() > k) {
          best.poll();
        }
      }
    }
    ScoreDoc[] out = new ScoreDoc[best.size()];
    for (int i = out.length - 1; i >= 0; i--) {
      out[i] = best.poll();
    }
    return new TopDocs(new org.apache.lucene.search.TotalHits(out.length, org.apache.lucene.search.TotalHits.Relation.EQUAL_TO), out);
  }

  private static Query set(String field, JsonNode values, boolean lower, String prefix) {
    List<BytesRef> refs = new ArrayList<>();
    for (JsonNode n : values) {
      String v = lower ? n.asText().toLowerCase(java.util.Locale.ROOT) : n.asText();
      refs.add(new BytesRef(prefix == null ? v : prefix + v));
    }
    return new TermInSetQuery(field, refs);
  }

  @Override
  public void close() throws IOException {
    index.close();
  }
}

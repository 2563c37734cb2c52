package io.refind.lucene;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Paths;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.SearcherFactory;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

/**
 * refind's embedded engine: one Lucene index of chat messages, with the loops that touch every hit or every
 * document done here, so a search round or a write batch crosses the Python-Java bridge a few times, not
 * once per field per hit. This class is the one door Python calls ({@code refind/store/lucene.py}): it holds
 * the shared state (the directory, the writer, the searcher manager, the write lock, the reusable message
 * document, the vector index) and hands each call to the class of its concern:
 *
 * <ul>
 *   <li>{@link Analysis}: text to index terms, a text as a bag of words;
 *   <li>{@link Reads}: BM25 over messages, browsing, lookups by id, counts, the write side's lookups;
 *   <li>{@link Sessions}: BM25 over sessions and titles, the turns of spans, sessions' info and summaries;
 *   <li>{@link Rounds}: a whole search round (query, session ranking, fusion, spans) in one call;
 *   <li>{@link Standing}: what messages say that stands, read and rewritten;
 *   <li>{@link Writes}: write batches, commits, deletions, retention;
 *   <li>{@link Upgrade}: an older format rewritten in place;
 *   <li>{@link MessageVectors} and {@link Vectors}: the vectors and their queue;
 *   <li>beneath them {@link LuceneIndex} (an index opened to read or write: the messages', the vectors'), {@link
 *       Searching} and {@link Writing} (the state each of those works on), {@link Queries}
 *       (filters, the owner filter), {@link Hits} (hit fields, the stored messages' cache), {@link
 *       DocValuesWalk} (doc values read in index order), {@link Documents} (the document layout) and {@link
 *       Wire} (every record exchanged with Python, field by field).
 * </ul>
 *
 * <p>Arguments and results are JSON (or plain strings and numbers): one string crosses the bridge per call.
 * Every method is safe to call from many threads at once: reads acquire a searcher from a SearcherManager;
 * writes and commits share one lock, so a commit never holds half of a write batch.
 *
 * <p>Document layout (format 4): one document per message (kind "m"), per session (kind "s": its whole text
 * for session-level BM25), per session text (kind "t": that text stored, for appends) and per idempotent
 * request (kind "r": its marker). A message's hit fields (id, session, turn, time, role) are doc values, so a
 * ranking pass never decompresses stored messages; the verbatim message is the stored field "raw". Doc
 * values that formats 1-2 lacked have fields of their own ("user_dv", "role_dv", "s_session_dv"): Lucene
 * keeps a field's structure for the life of an index, so an older index can be upgraded in place. The
 * analyzed fields ("contents", "s_contents") hold term frequencies without positions (no query reads them);
 * an index of format 3 or older holds positions and keeps them, for the same reason.
 */
public final class Engine implements Closeable {
  private final LuceneIndex index; // its writer null when read-only
  private final BM25Similarity similarity;
  private final Object writeLock = new Object();
  private final Vectors vectors; // null: read-only over an index from before vectors (none yet)
  private final Analysis analysis;
  private final Reads reads;
  private final Sessions sessions;
  private final Rounds rounds;
  private final Standing standing;
  private final Writes writes;
  private final Upgrade upgrade;
  private final MessageVectors messageVectors;

  private Engine(String path, boolean readOnly, float k1, float b, double ramBufferMb, boolean positions)
      throws IOException {
    FieldType textType = Documents.textType(positions);
    Documents.MessageDoc doc = new Documents.MessageDoc(textType);
    this.analysis = new Analysis(Analysis.buildAnalyzer());
    this.similarity = new BM25Similarity(k1, b);
    IndexWriterConfig config = readOnly ? null : writerConfig(analysis, similarity, ramBufferMb);
    Directory directory = path == null ? new ByteBuffersDirectory() : FSDirectory.open(Paths.get(path));
    SearcherFactory factory =
        new SearcherFactory() {
          @Override
          public IndexSearcher newSearcher(IndexReader reader, IndexReader previous) {
            IndexSearcher searcher = new Queries.Searcher(reader);
            searcher.setSimilarity(similarity);
            return searcher;
          }
        };
    this.index = new LuceneIndex(directory, config, factory);
    IndexWriter writer = index.writer;
    SearcherManager manager = index.manager;
    Vectors v = null;
    try {
      v = Vectors.open(path == null ? null : Paths.get(path, "vectors"), readOnly);
    } catch (IOException | RuntimeException e) {
      manager.close();
      if (writer != null) {
        writer.rollback();
      }
      directory.close();
      throw e;
    }
    this.vectors = v;
    this.reads = new Reads(manager, analysis);
    this.sessions = new Sessions(manager, analysis);
    this.rounds = new Rounds(manager, analysis);
    this.standing = new Standing(manager, writer, writeLock, analysis, doc);
    this.writes = new Writes(manager, writer, writeLock, analysis, doc, textType, vectors, reads);
    this.upgrade = new Upgrade(manager, writer, writeLock, analysis, doc, writes);
    this.messageVectors = new MessageVectors(manager, writeLock, vectors, reads);
  }

  /** How the messages' index is written. */
  private static IndexWriterConfig writerConfig(Analysis analysis, BM25Similarity similarity, double ramBufferMb) {
    IndexWriterConfig config = new IndexWriterConfig(analysis.analyzer());
    config.setOpenMode(IndexWriterConfig.OpenMode.CREATE_OR_APPEND);
    config.setSimilarity(similarity);
    config.setRAMBufferSizeMB(ramBufferMb);
    // merges of adjacent segments only: documents keep insertion order, so equal-score hits come back in
    // the same order however many commits built the index
    config.setMergePolicy(new LogByteSizeMergePolicy());
    // merges in the writing thread: the segments, and so the BM25 statistics (which count deleted
    // documents until their segment is merged), follow from the writes alone, not from how fast a
    // background merge ran; searches of an index give the same answers on a busy machine and a quiet one
    config.setMergeScheduler(new SerialMergeScheduler());
    config.setCommitOnClose(false); // what was written but not committed was never acknowledged
    return config;
  }

  /**
   * Opens (or creates) the index at {@code path}; {@code null} keeps it in memory. {@code positions}: index
   * the analyzed fields with positions, as formats 1-3 did (Lucene refuses to change a field's index options
   * within an index); a new index has none.
   */
  public static Engine open(
      String path, boolean readOnly, double k1, double b, double ramBufferMb, boolean positions)
      throws IOException {
    return new Engine(path, readOnly, (float) k1, (float) b, ramBufferMb, positions);
  }

  /** Whether a Lucene index exists at {@code path}. */
  public static boolean exists(String path) throws IOException {
    try (Directory d = FSDirectory.open(Paths.get(path))) {
      return DirectoryReader.indexExists(d);
    }
  }

  /** The Lucene version this engine runs. */
  public static String luceneVersion() {
    return org.apache.lucene.util.Version.LATEST.toString();
  }

  private void checkWritable() {
    if (index.writer == null) {
      throw new IllegalStateException("read-only");
    }
  }

  // ------------------------------------------------------------------------------------------ analysis

  /** The index terms of {@code text}, in order, one per line. */
  public String analyze(String text) throws IOException {
    return String.join("\n", analysis.terms(text));
  }

  // ------------------------------------------------------------------------------------------ reads

  /**
   * BM25 over {@code user}'s messages: the analyzed terms of {@code text} as a bag of words (never query
   * syntax), filters applied before the top {@code k}. A JSON list of hits, best first; with {@code
   * content} each hit carries its stored message ("raw"), else only its doc-value fields.
   */
  public byte[] search(String user, String text, int k, String filters, boolean content)
      throws IOException {
    return reads.search(user, text, k, filters, content);
  }

  /** A whole search round in one call: {@link Rounds#round}. */
  public byte[] round(String user, String spec) throws IOException {
    return rounds.round(user, spec);
  }

  /** Messages of {@code user} matching only {@code filters}, newest (or oldest) first, with content. */
  public byte[] browse(String user, int k, String filters, boolean newestFirst) throws IOException {
    return reads.browse(user, k, filters, newestFirst);
  }

  /** The messages of {@code user} that state something standing: {@link Standing#standing}. */
  public byte[] standing(String user, int k) throws IOException {
    return standing.standing(user, k);
  }

  /** Sets what stored messages say that stands (not committed): {@link Standing#setStanding}. */
  public long setStanding(byte[] records) throws IOException {
    checkWritable();
    return standing.setStanding(records);
  }

  /** BM25 over whole sessions of {@code user} (restricted to {@code sessionIds}, a JSON list, when given). */
  public String searchSessions(String user, String text, int k, String sessionIds) throws IOException {
    return sessions.searchSessions(user, text, k, sessionIds);
  }

  /** BM25 over the titles of {@code user}'s sessions (restricted to {@code sessionIds} when given). */
  public String searchTitles(String user, String text, int k, String sessionIds) throws IOException {
    return sessions.searchTitles(user, text, k, sessionIds);
  }

  /** Several windows of {@code user}'s sessions in one call: {@link Sessions#windows}. */
  public byte[] windows(String user, String spans) throws IOException {
    return sessions.windows(user, spans);
  }

  /** The info of {@code user}'s sessions: {@link Sessions#sessionInfos}. */
  public String sessionInfos(String user, String sessionIds) throws IOException {
    return sessions.sessionInfos(user, sessionIds);
  }

  /** Every session of {@code user} with messages: {@link Sessions#sessionSummaries}. */
  public String sessionSummaries(String user) throws IOException {
    return sessions.sessionSummaries(user);
  }

  /** How many of {@code user}'s messages hold each distinct term of {@code text}: {@link Reads#termCounts}. */
  public String termCounts(String user, String text) throws IOException {
    return reads.termCounts(user, text);
  }

  /** {@code user}'s messages by id ({@code ids}: a JSON list), with content; missing ids are absent. */
  public byte[] get(String user, String ids) throws IOException {
    return reads.get(user, ids);
  }

  /** What a writer needs to know of stored sessions: {@link Reads#sessionStates}. */
  public String sessionStates(String wanted) throws IOException {
    return reads.sessionStates(wanted);
  }

  /** Which of the ids in {@code wanted} are stored: {@link Reads#existing}. */
  public String existing(String wanted) throws IOException {
    return reads.existing(wanted);
  }

  /** Every stored turn of the sessions in {@code wanted}: {@link Reads#sessionTurns}. */
  public String sessionTurns(String wanted) throws IOException {
    return reads.sessionTurns(wanted);
  }

  /** The payload stored with {@code user}'s {@code requestId}, or null. */
  public String requestMarker(String user, String requestId) throws IOException {
    return reads.requestMarker(user, requestId);
  }

  /** Messages of {@code user}, or of the whole index when {@code user} is null. */
  public long count(String user) throws IOException {
    return reads.count(user);
  }

  /** User ids with at least one message, sorted (a JSON list). */
  public String users() throws IOException {
    return reads.users();
  }

  /**
   * The version of the index searches see now: it changes whenever a write becomes visible to them, so a
   * result computed from the index at one version holds as long as the version does.
   */
  public long version() throws IOException {
    return reads.version();
  }

  /** Refreshes a read-only engine to the latest commit (a writer's engine is always current). */
  public void refresh() throws IOException {
    index.manager.maybeRefresh();
    if (vectors != null) {
      vectors.refresh();
    }
  }

  // ------------------------------------------------------------------------------------------ writes

  /** Writes one batch (JSON) without committing: {@link Writes#write}. */
  public void write(String batch) throws IOException {
    checkWritable();
    writes.write(Wire.MAPPER.readTree(batch));
  }

  /**
   * {@link #write(String)} of the batch as UTF-8 JSON bytes: a byte array crosses the bridge as one copy,
   * where a long String of non-ASCII text is converted character by character (ten times slower measured).
   */
  public void write(byte[] batch) throws IOException {
    checkWritable();
    writes.write(Wire.MAPPER.readTree(batch));
  }

  /**
   * Makes every write so far durable (fsync) and visible to the next search: the vector index first (a
   * message's queue entry is durable before the message), then the messages.
   */
  public void commit() throws IOException {
    checkWritable();
    writes.commit();
  }

  /** Deletes one session of {@code user}, durably; returns the messages removed. */
  public long deleteSessionOf(String user, String sid) throws IOException {
    checkWritable();
    return writes.deleteSessionOf(user, sid);
  }

  /** Deletes every message, session document and request marker of {@code user}, durably. */
  public long deleteUser(String user) throws IOException {
    checkWritable();
    return writes.deleteUser(user);
  }

  /** Retention, without committing: {@link Writes#expire}. */
  public String expire(long cutoff) throws IOException {
    checkWritable();
    return writes.expire(cutoff);
  }

  /** Rewrites every document of an older format in this one (not committed): {@link Upgrade#upgrade}. */
  public long upgrade(long legacyAdded) throws IOException {
    checkWritable();
    return upgrade.upgrade(legacyAdded);
  }

  // ------------------------------------------------------------------------------------------ vectors

  /**
   * Sets how many vectors a KNN's filter may admit for them to be compared one by one rather than searched
   * in the HNSW graph (default 20,000; tests set 0 to search the graph); returns the previous value.
   */
  public static int knnExactMax(int n) {
    int old = Vectors.exactMax;
    Vectors.exactMax = n;
    return old;
  }

  /** Whether this engine has a vector index (a read-only one over an index from before vectors has none). */
  public boolean hasVectors() {
    return vectors != null;
  }

  /** The k nearest of {@code user}'s vectors to {@code vector}: {@link MessageVectors#knn}. */
  public byte[] knn(String user, float[] vector, int k, String filters) throws IOException {
    return messageVectors.knn(user, vector, k, filters);
  }

  /**
   * [vectors, pending] of {@code user} (null: everyone), as a JSON list; {@code implicit}: the index has no
   * model recorded (every message without a vector awaits one: {@link MessageVectors#vectorCounts}).
   */
  public String vectorCounts(String user, boolean implicit) throws IOException {
    return messageVectors.vectorCounts(user, implicit);
  }

  /** Up to {@code limit} messages awaiting their vector, oldest write first. */
  public byte[] pendingVectors(int limit) throws IOException {
    checkWritable();
    return messageVectors.pendingVectors(limit);
  }

  /** Writes vectors (not committed); returns how many were written. */
  public int writeVectors(byte[] records) throws IOException {
    checkWritable();
    return messageVectors.writeVectors(records);
  }

  /** Queues every stored message (not committed): {@link MessageVectors#queueAll}. */
  public long queueAll(boolean drop) throws IOException {
    checkWritable();
    return messageVectors.queueAll(drop);
  }

  /**
   * A model is about to be recorded: every stored message is queued and each write from now on, committed
   * first ({@link MessageVectors#startQueueing}); the caller records the model after this returns. Returns
   * how many messages were queued.
   */
  public long startQueueing() throws IOException {
    checkWritable();
    return messageVectors.startQueueing(writes);
  }

  /**
   * Whether the index has a model recorded, so its queue is written (at open: the queue is as a previous
   * writer left it), or has none (after {@link #queueAll} with drop, committed: the queue is implicit).
   */
  public void setQueueing(boolean on) {
    checkWritable();
    messageVectors.setQueueing(on);
  }

  // ------------------------------------------------------------------------------------------ closing

  @Override
  public void close() throws IOException {
    try {
      if (vectors != null) {
        vectors.close();
      }
    } finally {
      index.close();
    }
  }
}

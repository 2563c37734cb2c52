package io.refind.lucene;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.ConstantScoreQuery;
import org.apache.lucene.search.IndexOrDocValuesQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.SearcherFactory;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermInSetQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopFieldCollector;
import org.apache.lucene.search.TopScoreDocCollector;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

/**
 * refind's embedded engine: one Lucene index of chat messages, with the loops that touch every hit or every
 * document done here, so a search round or a write batch crosses the Python-Java bridge a few times, not
 * once per field per hit.
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
  private static final String SEP = "\u001f";
  private static final int MAX_TERMS = 64;
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final JsonFactory JSON = MAPPER.getFactory();
  // Results that carry messages are UTF-8 bytes, not Strings: the bridge copies a byte[] as it is, while a
  // String holding any non-ASCII character is converted to Python char by char
  private static final byte[] EMPTY_LIST = "[]".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  private final Directory directory;
  private final IndexWriter writer; // null when read-only
  private final SearcherManager manager;
  private final Analyzer analyzer;
  private final BM25Similarity similarity;
  private final boolean readOnly;
  private final Object writeLock = new Object();
  private final org.apache.lucene.document.FieldType textType;
  private final MessageDoc doc;
  private final Vectors vectors; // null: read-only over an index from before vectors (none yet)

  private Engine(String path, boolean readOnly, float k1, float b, double ramBufferMb, boolean positions)
      throws IOException {
    this.readOnly = readOnly;
    this.textType = textType(positions);
    this.doc = new MessageDoc(textType);
    this.analyzer = buildAnalyzer();
    this.similarity = new BM25Similarity(k1, b);
    this.directory = path == null ? new ByteBuffersDirectory() : FSDirectory.open(Paths.get(path));
    SearcherFactory factory =
        new SearcherFactory() {
          @Override
          public IndexSearcher newSearcher(IndexReader reader, IndexReader previous) {
            IndexSearcher searcher = new Searcher(reader);
            searcher.setSimilarity(similarity);
            return searcher;
          }
        };
    try {
      if (readOnly) {
        this.writer = null;
        this.manager = new SearcherManager(directory, factory);
      } else {
        IndexWriterConfig config = new IndexWriterConfig(analyzer);
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
  }

  static JsonFactory jsonFactory() {
    return JSON;
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

  /**
   * An analyzed, unstored field: with term frequencies (BM25 needs them, and the length norms, which do not
   * depend on the index options), with positions only for an index that already has them: no refind query
   * reads positions, and writing them cost import time and index size (docs/benchmarks/perf.md).
   */
  static org.apache.lucene.document.FieldType textType(boolean positions) {
    org.apache.lucene.document.FieldType t = new org.apache.lucene.document.FieldType(TextField.TYPE_NOT_STORED);
    if (!positions) {
      t.setIndexOptions(org.apache.lucene.index.IndexOptions.DOCS_AND_FREQS);
    }
    t.freeze();
    return t;
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

  /**
   * The analyzer chain (its name is recorded in refind.json): the standard tokenizer, then cjkWidth,
   * lowercase, cjkBigram, englishPossessive, stop (Lucene's English set) and porterStem. Text reaches it
   * through {@link #terms}, which first maps ':' to a space: UAX#29 keeps "title:kayak" one word (':' is
   * MidLetter), in chat text it is two.
   */
  static Analyzer buildAnalyzer() {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String fieldName) {
        org.apache.lucene.analysis.standard.StandardTokenizer source =
            new org.apache.lucene.analysis.standard.StandardTokenizer();
        TokenStream ts = new org.apache.lucene.analysis.cjk.CJKWidthFilter(source);
        ts = new org.apache.lucene.analysis.LowerCaseFilter(ts);
        ts = new org.apache.lucene.analysis.cjk.CJKBigramFilter(ts);
        ts = new org.apache.lucene.analysis.en.EnglishPossessiveFilter(ts);
        ts = new org.apache.lucene.analysis.StopFilter(
            ts, org.apache.lucene.analysis.en.EnglishAnalyzer.ENGLISH_STOP_WORDS_SET);
        ts = new org.apache.lucene.analysis.en.PorterStemFilter(ts);
        return new TokenStreamComponents(source, ts);
      }

      @Override
      protected TokenStream normalize(String fieldName, TokenStream in) {
        return new org.apache.lucene.analysis.LowerCaseFilter(
            new org.apache.lucene.analysis.cjk.CJKWidthFilter(in));
      }
    };
  }

  // ------------------------------------------------------------------------------------------ analysis

  /** The index terms of {@code text}, in order, one per line. */
  public String analyze(String text) throws IOException {
    return String.join("\n", terms(text));
  }

  private List<String> terms(String text) throws IOException {
    return terms(analyzer, text);
  }

  /** The index terms of {@code text} by {@code analyzer} (the engine's: {@link #buildAnalyzer}), in order. */
  static List<String> terms(Analyzer analyzer, String text) throws IOException {
    List<String> out = new ArrayList<>();
    if (text == null || text.isBlank()) {
      return out;
    }
    try (TokenStream ts = analyzer.tokenStream("contents", text.replace(':', ' '))) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) {
        out.add(term.toString());
      }
      ts.end();
    }
    return out;
  }

  /** The distinct terms of {@code text}, most frequent first (ties: first seen), at most MAX_TERMS. */
  private List<Map.Entry<String, Integer>> bag(String text) throws IOException {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (String t : terms(text)) {
      counts.merge(t, 1, Integer::sum);
    }
    List<Map.Entry<String, Integer>> entries = new ArrayList<>(counts.entrySet());
    entries.sort(Comparator.comparingInt((Map.Entry<String, Integer> e) -> -e.getValue()));
    return entries.size() > MAX_TERMS ? entries.subList(0, MAX_TERMS) : entries;
  }

  private Query bagQuery(String field, String text) throws IOException {
    List<Map.Entry<String, Integer>> bag = bag(text);
    if (bag.isEmpty()) {
      return null;
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    for (Map.Entry<String, Integer> e : bag) {
      Query tq = new TermQuery(new Term(field, e.getKey()));
      b.add(e.getValue() > 1 ? new BoostQuery(tq, e.getValue()) : tq, Occur.SHOULD);
    }
    return b.build();
  }

  // ------------------------------------------------------------------------------------------ queries

  /**
   * Whether every document of {@code searcher} with a {@code user_id} is {@code user}'s (one person's
   * history, a personal index's common case). Then a query over message text needs no owner filter: only
   * message documents carry {@code contents}, and every message a {@code user_id}, in every index format.
   * Without the filter a query of words alone is a top-level disjunction, which Lucene scores with
   * block-max skipping; a conjunction with a posting list as long as the index must step through it.
   */
  private static boolean ownsAll(IndexSearcher searcher, String user) throws IOException {
    return ownsAll(searcher, user, "user_id");
  }

  /**
   * The same for {@code field}: "user_id" (messages, for a query over "contents") or "s_user" (session and
   * title documents, for a query over "s_contents" or "i_title", which only they carry).
   */
  private static boolean ownsAll(IndexSearcher searcher, String user, String field) throws IOException {
    if (!(searcher instanceof Searcher known)) {
      return ownsAllUncached(searcher.getIndexReader(), user, field);
    }
    Map<String, Boolean> owners = field.equals("user_id") ? known.ownsMessages : known.ownsSessions;
    Boolean cached = owners.get(user);
    if (cached != null) {
      return cached;
    }
    boolean owns = ownsAllUncached(searcher.getIndexReader(), user, field);
    if (owners.size() >= OWNERS_PER_SEARCHER) {
      owners.clear(); // many people searched on one version of the index: start over, stay bounded
    }
    owners.put(user, owns);
    return owns;
  }

  /**
   * The engine's searchers: one per version of the index, which never changes, so they remember {@link
   * #ownsAll}'s answers (a round asks up to five times, each a seek per segment: after a day of adds, a
   * dozen segments).
   */
  private static final class Searcher extends IndexSearcher {
    final Map<String, Boolean> ownsMessages = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<String, Boolean> ownsSessions = new java.util.concurrent.ConcurrentHashMap<>();

    Searcher(IndexReader reader) {
      super(reader);
    }
  }

  private static final int OWNERS_PER_SEARCHER = 4096;

  private static boolean ownsAllUncached(IndexReader reader, String user, String field) throws IOException {
    BytesRef term = new BytesRef(user);
    for (LeafReaderContext leaf : reader.leaves()) {
      Terms users = leaf.reader().terms(field);
      if (users == null) {
        continue; // no messages in this segment
      }
      TermsEnum te = users.iterator();
      if (!te.seekExact(term) || te.docFreq() != users.getDocCount()) { // both count deleted documents
        return false;
      }
    }
    return true;
  }

  private static TermInSetQuery termSet(String field, Iterable<String> values) {
    List<BytesRef> refs = new ArrayList<>();
    for (String v : values) {
      refs.add(new BytesRef(v));
    }
    return new TermInSetQuery(field, refs);
  }

  /**
   * A range over a field indexed both as points and as doc values: Lucene walks the points when the range
   * leads the query, and checks the doc values of the few candidates when another clause leads (a user's
   * window, a session), instead of collecting every matching document of the index first.
   */
  private static Query intRange(String field, int lo, int hi) {
    return new IndexOrDocValuesQuery(
        IntPoint.newRangeQuery(field, lo, hi), NumericDocValuesField.newSlowRangeQuery(field, lo, hi));
  }

  private static Query longRange(String field, long lo, long hi) {
    return new IndexOrDocValuesQuery(
        LongPoint.newRangeQuery(field, lo, hi), NumericDocValuesField.newSlowRangeQuery(field, lo, hi));
  }

  private static List<String> strings(JsonNode node) {
    List<String> out = new ArrayList<>();
    if (node != null && node.isArray()) {
      for (JsonNode n : node) {
        out.add(n.asText());
      }
    }
    return out;
  }

  /**
   * The user filter and {@code filters} (JSON: time_from, time_to, session_ids, roles, exclude_ids,
   * exclude_sessions, any_terms; all optional) around {@code main} (a MUST clause, or none).
   */
  private Query filtered(String user, String filters, Query main) throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    if (main != null) {
      b.add(main, Occur.MUST);
    }
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    return filtered(b, user, filters == null || filters.isEmpty() ? null : MAPPER.readTree(filters));
  }

  /** {@code b} with the filters of {@code f} (null: none) added. */
  private static Query filtered(BooleanQuery.Builder b, String user, JsonNode f) {
    if (f != null && !f.isNull()) {
      JsonNode from = f.get("time_from");
      JsonNode to = f.get("time_to");
      if ((from != null && !from.isNull()) || (to != null && !to.isNull())) {
        long lo = from != null && !from.isNull() ? from.asLong() : Long.MIN_VALUE;
        long hi = to != null && !to.isNull() ? to.asLong() : Long.MAX_VALUE;
        b.add(longRange("ts", lo, hi), Occur.FILTER);
      }
      if (f.hasNonNull("session_ids")) {
        b.add(termSet("session_id", strings(f.get("session_ids"))), Occur.FILTER);
      }
      if (f.hasNonNull("roles")) {
        List<String> roles = new ArrayList<>();
        for (String r : strings(f.get("roles"))) {
          roles.add(r.toLowerCase(java.util.Locale.ROOT));
        }
        b.add(termSet("role", roles), Occur.FILTER);
      }
      List<String> excluded = strings(f.get("exclude_ids"));
      if (!excluded.isEmpty()) {
        List<String> keys = new ArrayList<>(excluded.size());
        for (String id : excluded) {
          keys.add(user + SEP + id);
        }
        b.add(termSet("key", keys), Occur.MUST_NOT);
      }
      List<String> sessions = strings(f.get("exclude_sessions"));
      if (!sessions.isEmpty()) {
        b.add(termSet("session_id", sessions), Occur.MUST_NOT);
      }
      if (f.has("any_terms")) { // a hit needs one of these index terms (an empty list admits nothing)
        b.add(termSet("contents", strings(f.get("any_terms"))), Occur.FILTER);
      }
    }
    return b.build();
  }

  /**
   * BM25 over {@code user}'s messages: the analyzed terms of {@code text} as a bag of words (never query
   * syntax), filters applied before the top {@code k}. A JSON list of hits, best first; with {@code
   * content} each hit carries its stored message ("raw"), else only its doc-value fields.
   */
  public byte[] search(String user, String text, int k, String filters, boolean content)
      throws IOException {
    Query bag = bagQuery("contents", text);
    if (bag == null || k <= 0) {
      return EMPTY_LIST.clone();
    }
    JsonNode f = filters == null || filters.isEmpty() ? null : MAPPER.readTree(filters);
    IndexSearcher searcher = manager.acquire();
    try {
      return hits(searcher, topDocs(searcher, user, bag, k, f), true, content);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * One search round in one call (refind.search.round, which runs the same steps through the other calls
   * for engines without this one): the BM25 query over {@code user}'s messages, the read-set, the session
   * ranking, the fusion, the windows around the chosen hits, the analyzed terms and, when asked, the
   * titles' ranking. {@code spec} (JSON): text, fetch, top_k, window, filters (time_from, time_to,
   * session_ids, roles), exclude_ids, exclude_sessions, read (drop read hits after an unfiltered query, and
   * query again with the exclusions when fewer than top_k remain), sessions ("hits" or "documents"),
   * restrict, k0, w_hit, w_session, titles, content_terms (optional: the hits are chosen among the messages
   * holding one of them, the session ranking still from every match). The result (JSON): hits (the unread hits, [id, session, turn,
   * ts, role, score]), orders (the round's session orders), selected ([id, fused score] of the chosen
   * hits), spans ([session, first turn, last turn, best fused score, [turns with content]]), terms and
   * titled (the sessions with hits by their titles' BM25).
   */
  public byte[] round(String user, String spec) throws IOException {
    JsonNode r = MAPPER.readTree(spec);
    String text = r.get("text").asText();
    int fetch = r.get("fetch").asInt();
    int topK = r.get("top_k").asInt();
    int window = r.get("window").asInt();
    JsonNode open = r.get("filters");
    List<String> exIds = strings(r.get("exclude_ids"));
    List<String> exSessions = strings(r.get("exclude_sessions"));
    boolean readSet = r.get("read").asBoolean();
    double k0 = r.get("k0").asDouble();
    double wHit = r.get("w_hit").asDouble();
    double wSession = r.get("w_session").asDouble();
    Query bag = bagQuery("contents", text);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    IndexSearcher searcher = manager.acquire();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      List<Hit> ranked = List.of();
      List<Hit> unread = List.of();
      if (bag != null && fetch > 0) {
        ObjectNode full = open != null && open.isObject() ? ((ObjectNode) open).deepCopy() : MAPPER.createObjectNode();
        if (!exIds.isEmpty()) {
          full.set("exclude_ids", r.get("exclude_ids"));
        }
        if (!exSessions.isEmpty()) {
          full.set("exclude_sessions", r.get("exclude_sessions"));
        }
        if (r.has("content_terms")) { // ranked by every match, chosen among those with a content word
          ranked = top(searcher, user, bag, fetch, open);
          ObjectNode chosen = full.deepCopy();
          chosen.set("any_terms", r.get("content_terms"));
          unread = top(searcher, user, bag, fetch, chosen);
        } else if (readSet) {
          ranked = top(searcher, user, bag, fetch, open);
          java.util.Set<String> ids = new java.util.HashSet<>(exIds);
          java.util.Set<String> sessions = new java.util.HashSet<>(exSessions);
          unread = new ArrayList<>();
          for (Hit h : ranked) {
            if (!ids.contains(h.id) && !sessions.contains(h.session)) {
              unread.add(h);
            }
          }
          if (unread.size() < topK && unread.size() < ranked.size()) {
            unread = top(searcher, user, bag, fetch, full);
          }
        } else {
          ranked = unread = top(searcher, user, bag, fetch, full);
        }
      }
      g.writeArrayFieldStart("hits");
      for (Hit h : unread) {
        g.writeStartArray();
        g.writeString(h.id);
        g.writeString(h.session);
        g.writeNumber(h.turn);
        g.writeNumber(h.ts);
        g.writeString(h.role);
        g.writeNumber(h.score);
        g.writeEndArray();
      }
      g.writeEndArray();
      if (ranked.isEmpty() && unread.isEmpty()) {
        g.writeEndObject();
        g.close();
        return out.toByteArray();
      }
      // the session ranking (round.session_ranking)
      List<String> withHits = sessionsOf(ranked);
      List<String> r2 = null;
      List<List<String>> orders = new ArrayList<>();
      if (!r.get("sessions").asText().equals("documents") || withHits.isEmpty()) {
        orders.add(sessionsOfFused(fuse(ranked, k0, wHit, wSession, null)));
      } else {
        List<Object[]> byDoc =
            r.get("restrict").asBoolean()
                ? rankSessions(searcher, user, bagQuery("s_contents", text), withHits.size(), withHits, "s_contents")
                : rankSessions(searcher, user, bagQuery("s_contents", text), Math.max(withHits.size(), 50), null, "s_contents");
        r2 = new ArrayList<>();
        for (Object[] e : byDoc) {
          r2.add((String) e[0]);
        }
        orders.add(withHits);
        orders.add(r2);
      }
      g.writeArrayFieldStart("orders");
      for (List<String> order : orders) {
        g.writeStartArray();
        for (String sid : order) {
          g.writeString(sid);
        }
        g.writeEndArray();
      }
      g.writeEndArray();
      // the chosen hits and their windows (round.fuse, round._spans, the windows call)
      List<Object[]> fused = fuse(unread, k0, wHit, wSession, r2);
      List<Object[]> selected = fused.subList(0, Math.min(topK, fused.size()));
      g.writeArrayFieldStart("selected");
      for (Object[] e : selected) {
        g.writeStartArray();
        g.writeString(((Hit) e[0]).id);
        g.writeNumber((double) e[1]);
        g.writeEndArray();
      }
      g.writeEndArray();
      List<Object[]> spans = spans(selected, window);
      List<List<Hit>> turns = windowHits(searcher, user, spans);
      g.writeArrayFieldStart("spans");
      for (int i = 0; i < spans.size(); i++) {
        Object[] span = spans.get(i);
        g.writeStartArray();
        g.writeString((String) span[0]);
        g.writeNumber((long) span[1]);
        g.writeNumber((long) span[2]);
        g.writeNumber((double) span[3]);
        g.writeStartArray();
        for (Hit h : turns.get(i)) {
          h.write(g);
        }
        g.writeEndArray();
        g.writeEndArray();
      }
      g.writeEndArray();
      g.writeArrayFieldStart("terms");
      for (String t : new java.util.LinkedHashSet<>(terms(text))) {
        g.writeString(t);
      }
      g.writeEndArray();
      g.writeArrayFieldStart("titled");
      if (r.get("titles").asBoolean() && !unread.isEmpty()) {
        List<String> unreadSessions = sessionsOf(unread);
        for (Object[] e :
            rankSessions(searcher, user, bagQuery("i_title", text), unreadSessions.size(), unreadSessions, "i_title")) {
          g.writeString((String) e[0]);
        }
      }
      g.writeEndArray();
      g.writeEndObject();
    } finally {
      manager.release(searcher);
    }
    return out.toByteArray();
  }

  /**
   * The top {@code k} of {@code user}'s messages by {@code bag} (a clause over "contents") within filters
   * {@code f} (null: none), without exact total hits; the user filter is left out when {@link #ownsAll} says
   * it filters nothing.
   */
  private static ScoreDoc[] topDocs(IndexSearcher searcher, String user, Query bag, int k, JsonNode f)
      throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(bag, Occur.MUST);
    if (!ownsAll(searcher, user)) {
      b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    }
    TopScoreDocCollector collector = TopScoreDocCollector.create(k, k);
    searcher.search(filtered(b, user, f), collector);
    return collector.topDocs().scoreDocs;
  }

  /** {@link #topDocs} as hits with doc-value fields only. */
  private List<Hit> top(IndexSearcher searcher, String user, Query bag, int k, JsonNode f) throws IOException {
    return read(searcher, topDocs(searcher, user, bag, k, f), false);
  }

  /**
   * In one segment, the documents whose {@code field} is one of {@code ids}, as [document, index of its id
   * in {@code ids}] in document order (deleted ones included: the caller checks live documents).
   */
  private static List<int[]> docsOf(org.apache.lucene.index.LeafReader reader, String field, List<String> ids)
      throws IOException {
    List<int[]> out = new ArrayList<>();
    Terms terms = reader.terms(field);
    if (terms == null) {
      return out;
    }
    TermsEnum te = terms.iterator();
    org.apache.lucene.index.PostingsEnum pe = null;
    for (int i = 0; i < ids.size(); i++) {
      if (te.seekExact(new BytesRef(ids.get(i)))) {
        pe = te.postings(pe, org.apache.lucene.index.PostingsEnum.NONE);
        for (int d = pe.nextDoc(); d != org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS; d = pe.nextDoc()) {
          out.add(new int[] {d, i});
        }
      }
    }
    out.sort(Comparator.comparingInt(c -> c[0]));
    return out;
  }

  /** In one segment, {@code user}'s documents by {@code field}, or null when the segment has none. */
  private static org.apache.lucene.index.PostingsEnum ownedBy(
      org.apache.lucene.index.LeafReader reader, String field, String user) throws IOException {
    Terms terms = reader.terms(field);
    if (terms == null) {
      return null;
    }
    TermsEnum te = terms.iterator();
    return te.seekExact(new BytesRef(user)) ? te.postings(null, org.apache.lucene.index.PostingsEnum.NONE) : null;
  }

  /** Whether {@code it} holds document {@code d}, for targets in increasing order. */
  private static boolean holds(org.apache.lucene.search.DocIdSetIterator it, int d) throws IOException {
    return it.docID() == d || (it.docID() < d && it.advance(d) == d);
  }

  private static List<String> sessionsOf(List<Hit> hits) {
    return new ArrayList<>(new java.util.LinkedHashSet<>(hits.stream().map(h -> h.session).toList()));
  }

  private static List<String> sessionsOfFused(List<Object[]> fused) {
    java.util.LinkedHashSet<String> out = new java.util.LinkedHashSet<>();
    for (Object[] e : fused) {
      out.add(((Hit) e[0]).session);
    }
    return new ArrayList<>(out);
  }

  /**
   * round.fuse: [hit, fused score] best first, ties in BM25 order. A hit's score is taken as the client
   * reads it from JSON (the float's shortest decimal, as a double), so session sums equal the client's.
   */
  private static List<Object[]> fuse(
      List<Hit> hits, double k0, double wHit, double wSession, List<String> sessionOrder) {
    List<String> order = sessionOrder;
    if (order == null) {
      Map<String, Double> sums = new LinkedHashMap<>();
      for (Hit h : hits) {
        sums.merge(h.session, Double.parseDouble(Float.toString(h.score)), Double::sum);
      }
      order = new ArrayList<>(sums.keySet());
      final Map<String, Double> s = sums;
      order.sort(Comparator.comparingDouble(sid -> -s.get(sid)));
    }
    Map<String, Integer> rank = new HashMap<>();
    for (String sid : order) {
      rank.putIfAbsent(sid, rank.size() + 1);
    }
    int missing = rank.size() + 1;
    List<Object[]> scored = new ArrayList<>(hits.size());
    for (int i = 0; i < hits.size(); i++) {
      Hit h = hits.get(i);
      double f = wHit / (k0 + (i + 1)) + wSession / (k0 + rank.getOrDefault(h.session, missing));
      scored.add(new Object[] {h, f});
    }
    scored.sort(Comparator.comparingDouble(e -> -(double) e[1])); // stable
    return scored;
  }

  /** round._spans: merged [session, first turn, last turn, best score] around the chosen hits. */
  private static List<Object[]> spans(List<Object[]> selected, int window) {
    Map<String, List<double[]>> bySession = new LinkedHashMap<>();
    for (Object[] e : selected) {
      Hit h = (Hit) e[0];
      bySession
          .computeIfAbsent(h.session, k -> new ArrayList<>())
          .add(new double[] {Math.max(h.turn - window, 0), (double) h.turn + window, (double) e[1]});
    }
    List<Object[]> out = new ArrayList<>();
    for (Map.Entry<String, List<double[]>> e : bySession.entrySet()) {
      List<double[]> ranges = e.getValue();
      ranges.sort(
          Comparator.<double[]>comparingDouble(x -> x[0]).thenComparingDouble(x -> x[1]).thenComparingDouble(x -> x[2]));
      double lo = ranges.get(0)[0];
      double hi = ranges.get(0)[1];
      double best = ranges.get(0)[2];
      for (double[] x : ranges.subList(1, ranges.size())) {
        if (x[0] <= hi + 1) {
          hi = Math.max(hi, x[1]);
          best = Math.max(best, x[2]);
        } else {
          out.add(new Object[] {e.getKey(), (long) lo, (long) hi, best});
          lo = x[0];
          hi = x[1];
          best = x[2];
        }
      }
      out.add(new Object[] {e.getKey(), (long) lo, (long) hi, best});
    }
    return out;
  }

  /** Messages of {@code user} matching only {@code filters}, newest (or oldest) first, with content. */
  public byte[] browse(String user, int k, String filters, boolean newestFirst) throws IOException {
    if (k <= 0) {
      return EMPTY_LIST.clone();
    }
    Query query = filtered(user, filters, new MatchAllDocsQuery());
    IndexSearcher searcher = manager.acquire();
    try {
      Sort sort = new Sort(new SortField("ts", SortField.Type.LONG, newestFirst));
      TopDocs top = searcher.search(query, k, sort);
      return hits(searcher, top.scoreDocs, false, true);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * The messages of {@code user} that state something standing (their "standing" kind indexed at write
   * time: issue 37), newest first, at most {@code k}, with content (the stored message holds its standing
   * sentence, domain, subject and change flag). One query: no scan of the person's messages.
   */
  public byte[] standing(String user, int k) throws IOException {
    if (k <= 0) {
      return EMPTY_LIST.clone();
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    b.add(new TermQuery(new Term("kind", "m")), Occur.FILTER);
    b.add(termSet("standing", List.of("instruction", "preference", "fact")), Occur.FILTER);
    IndexSearcher searcher = manager.acquire();
    try {
      Sort sort =
          new Sort(
              new SortField("ts", SortField.Type.LONG, true),
              new SortField("session_id", SortField.Type.STRING, false),
              new SortField("turn", SortField.Type.LONG, true));
      TopDocs top = searcher.search(b.build(), k, sort);
      return hits(searcher, top.scoreDocs, false, true);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * Sets what stored messages say that stands (the upgrade of an index written before issue 37, or by
   * another version of the rule): {@code records} is a JSON list of [user, id, standing or null]. Each
   * message is rewritten from what it stored ("raw"), keeping its add time; its vector (kept apart, by key)
   * is untouched. Not committed. Returns how many messages were rewritten (missing ids are skipped).
   */
  public long setStanding(byte[] records) throws IOException {
    checkWritable();
    JsonNode list = MAPPER.readTree(records);
    long n = 0;
    synchronized (writeLock) {
      IndexSearcher searcher = manager.acquire();
      try {
        StoredFields stored = searcher.storedFields();
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        for (JsonNode e : list) {
          String user = e.get(0).asText();
          String key = user + SEP + e.get(1).asText();
          TopDocs top = searcher.search(kindAnd("m", new TermQuery(new Term("key", key))), 1);
          if (top.scoreDocs.length == 0) {
            continue;
          }
          int docId = top.scoreDocs[0].doc;
          JsonNode raw = MAPPER.readTree(stored.document(docId).get("raw"));
          LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(docId, leaves));
          NumericDocValues added = leaf.reader().getNumericDocValues("added");
          long when = added != null && added.advanceExact(docId - leaf.docBase) ? added.longValue() : 0L;
          com.fasterxml.jackson.databind.node.ArrayNode r = MAPPER.createArrayNode();
          r.add(user);
          r.add(raw.get("session_id").asText());
          r.add(raw.get("id").asText());
          r.add(raw.get("turn").asInt());
          r.add(raw.get("ts").asLong());
          r.add(raw.get("role").asText());
          r.add(raw.get("content").asText());
          r.add(raw.hasNonNull("speaker") ? raw.get("speaker").asText() : null);
          r.add(raw.hasNonNull("time_text") ? raw.get("time_text").asText() : null);
          r.add(true);
          r.add(e.get(2));
          doc.fill(r, terms(raw.get("content").asText()).toArray(new String[0]), when);
          writer.updateDocument(new Term("key", key), doc.doc);
          n++;
        }
      } finally {
        manager.release(searcher);
      }
    }
    return n;
  }

  /** BM25 over whole sessions of {@code user} (restricted to {@code sessionIds}, a JSON list, when given). */
  public String searchSessions(String user, String text, int k, String sessionIds) throws IOException {
    List<String> only =
        sessionIds != null && !sessionIds.isEmpty() ? strings(MAPPER.readTree(sessionIds)) : null;
    IndexSearcher searcher = manager.acquire();
    try {
      return scoredJson(rankSessions(searcher, user, bagQuery("s_contents", text), k, only, "s_contents"));
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * Sessions of {@code user} by BM25 of {@code bag} over their whole text ({@code field} "s_contents") or
   * their title ("i_title"), best first, restricted to {@code only} when not null: [session, score] pairs.
   */
  private static List<Object[]> rankSessions(
      IndexSearcher searcher, String user, Query bag, int k, List<String> only, String field)
      throws IOException {
    List<Object[]> out = new ArrayList<>();
    if (bag == null || k <= 0 || (only != null && only.isEmpty())) {
      return out;
    }
    boolean titles = field.equals("i_title");
    if (only != null) {
      return rankAmong(searcher, user, bag, k, only, titles ? "i_session" : "s_session");
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(bag, Occur.MUST);
    if (titles) {
      b.add(new TermQuery(new Term("kind", "i")), Occur.FILTER);
    }
    if (!ownsAll(searcher, user, "s_user")) {
      b.add(new TermQuery(new Term("s_user", user)), Occur.FILTER);
    }
    if (only != null) {
      b.add(termSet(titles ? "i_session" : "s_session", only), Occur.FILTER);
    }
    TopScoreDocCollector collector = TopScoreDocCollector.create(k, k);
    searcher.search(b.build(), collector);
    ScoreDoc[] docs = collector.topDocs().scoreDocs;
    String[] sids = sortedValues(searcher, docs, titles ? "i_session_dv" : "s_session_dv");
    for (int i = 0; i < docs.length; i++) {
      out.add(new Object[] {sids[i], docs[i].score});
    }
    return out;
  }

  /**
   * {@link #rankSessions} among the sessions {@code only}: their documents found by their ids ({@code
   * idField}, "s_session" or "i_session") and scored by {@code bag}'s scorer, as the collector of the
   * unrestricted query scores them (the same scorer, ties by document). A query with the ids as a filter
   * spent most of its time building that filter.
   */
  private static List<Object[]> rankAmong(
      IndexSearcher searcher, String user, Query bag, int k, List<String> only, String idField)
      throws IOException {
    org.apache.lucene.search.Weight weight =
        searcher.createWeight(searcher.rewrite(bag), org.apache.lucene.search.ScoreMode.TOP_SCORES, 1f);
    List<String> ids = new ArrayList<>(new java.util.LinkedHashSet<>(only));
    List<Object[]> scored = new ArrayList<>(); // [session, score, global doc]
    // one person's index: every session document is theirs (a segment without any holds no ids either)
    boolean owner = ownsAll(searcher, user, "s_user");
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      org.apache.lucene.index.PostingsEnum mine = owner ? null : ownedBy(leaf.reader(), "s_user", user);
      List<int[]> candidates = !owner && mine == null ? List.of() : docsOf(leaf.reader(), idField, ids);
      org.apache.lucene.search.Scorer scorer = candidates.isEmpty() ? null : weight.scorer(leaf);
      if (scorer == null) {
        continue;
      }
      org.apache.lucene.search.TwoPhaseIterator twoPhase = scorer.twoPhaseIterator();
      org.apache.lucene.search.DocIdSetIterator it =
          twoPhase == null ? scorer.iterator() : twoPhase.approximation();
      org.apache.lucene.util.Bits live = leaf.reader().getLiveDocs();
      for (int[] c : candidates) {
        int d = c[0];
        if ((live != null && !live.get(d))
            || (!owner && !holds(mine, d)) // another user's session of the same id
            || !holds(it, d) // none of the words
            || (twoPhase != null && !twoPhase.matches())) {
          continue;
        }
        scored.add(new Object[] {ids.get(c[1]), scorer.score(), leaf.docBase + d});
      }
    }
    scored.sort(
        Comparator.<Object[]>comparingDouble(e -> -(float) e[1]).thenComparingInt(e -> (int) e[2]));
    return new ArrayList<>(scored.subList(0, Math.min(k, scored.size())));
  }

  private static String scoredJson(List<Object[]> scored) throws IOException {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      for (Object[] e : scored) {
        g.writeStartArray();
        g.writeString((String) e[0]);
        g.writeNumber((float) e[1]);
        g.writeEndArray();
      }
      g.writeEndArray();
    }
    return out.toString();
  }

  /**
   * Several windows of {@code user}'s sessions in one query: {@code spans} is a JSON list of [session,
   * first turn, last turn]; the result is a JSON list (one per span) of lists of hits with content, in turn
   * order.
   */
  public byte[] windows(String user, String spans) throws IOException {
    JsonNode list = MAPPER.readTree(spans);
    List<Object[]> wanted = new ArrayList<>();
    for (JsonNode span : list) {
      wanted.add(new Object[] {span.get(0).asText(), span.get(1).asLong(), span.get(2).asLong()});
    }
    IndexSearcher searcher = manager.acquire();
    List<List<Hit>> grouped;
    try {
      grouped = windowHits(searcher, user, wanted);
    } finally {
      manager.release(searcher);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      for (List<Hit> group : grouped) {
        g.writeStartArray();
        for (Hit h : group) {
          h.write(g);
        }
        g.writeEndArray();
      }
      g.writeEndArray();
    }
    return out.toByteArray();
  }

  /**
   * The turns of {@code spans} ([session, first turn, last turn] each) of {@code user}'s sessions with
   * content, one list per span in turn order. Read without a query: in each segment the sessions' posting
   * lists give their documents, the user's posting list (unless {@link #ownsAll}) and the turn doc values
   * keep those of the user within a span; a query per chunk of sessions cost more to build than to run.
   */
  private List<List<Hit>> windowHits(IndexSearcher searcher, String user, List<Object[]> spans)
      throws IOException {
    List<List<Hit>> grouped = new ArrayList<>();
    Map<String, List<Integer>> bySession = new LinkedHashMap<>();
    for (int i = 0; i < spans.size(); i++) {
      grouped.add(new ArrayList<>());
      Object[] span = spans.get(i);
      if (Math.min((long) span[2], Integer.MAX_VALUE) >= Math.max((long) span[1], 0)) {
        bySession.computeIfAbsent((String) span[0], k -> new ArrayList<>()).add(i);
      }
    }
    if (bySession.isEmpty()) {
      return grouped;
    }
    boolean owner = ownsAll(searcher, user);
    List<String> sessions = new ArrayList<>(bySession.keySet());
    List<List<Integer>> spansOf = new ArrayList<>(bySession.values());
    List<ScoreDoc> found = new ArrayList<>();
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      // one person's index: every message is theirs (a segment without any holds no session ids either)
      org.apache.lucene.index.PostingsEnum mine = owner ? null : ownedBy(leaf.reader(), "user_id", user);
      if (!owner && mine == null) {
        continue;
      }
      org.apache.lucene.util.Bits live = leaf.reader().getLiveDocs();
      NumericDocValues turns = DocValues.getNumeric(leaf.reader(), "turn");
      for (int[] c : docsOf(leaf.reader(), "session_id", sessions)) {
        int d = c[0];
        if ((live != null && !live.get(d))
            || (!owner && !holds(mine, d)) // another user's session of the same id
            || !turns.advanceExact(d)) {
          continue;
        }
        long turn = turns.longValue();
        for (int i : spansOf.get(c[1])) {
          Object[] span = spans.get(i);
          if ((long) span[1] <= turn && turn <= (long) span[2]) {
            found.add(new ScoreDoc(leaf.docBase + d, 0f));
            break;
          }
        }
      }
    }
    // in document order (segments in order, each one's documents sorted): read forwards
    for (Hit h : read(searcher, found.toArray(new ScoreDoc[0]), true)) {
      h.score = 0f; // a lookup: nothing is ranked
      for (int i : bySession.getOrDefault(h.session, List.of())) {
        Object[] span = spans.get(i);
        if ((long) span[1] <= h.turn && h.turn <= (long) span[2]) {
          grouped.get(i).add(h);
        }
      }
    }
    for (List<Hit> group : grouped) {
      group.sort(Comparator.comparingInt(h -> h.turn));
    }
    return grouped;
  }

  /**
   * For each distinct analyzed term of {@code text}: how many of {@code user}'s messages hold it (a JSON
   * object, terms in order).
   */
  public String termCounts(String user, String text) throws IOException {
    List<Map.Entry<String, Integer>> bag = bag(text);
    Map<String, Integer> order = new LinkedHashMap<>();
    for (String t : terms(text)) {
      order.putIfAbsent(t, 0);
    }
    IndexSearcher searcher = manager.acquire();
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      java.util.Set<String> kept = new java.util.HashSet<>();
      for (Map.Entry<String, Integer> e : bag) {
        kept.add(e.getKey());
      }
      g.writeStartObject();
      boolean owner = ownsAll(searcher, user);
      for (String term : order.keySet()) {
        if (!kept.contains(term)) {
          continue;
        }
        BooleanQuery.Builder b = new BooleanQuery.Builder();
        b.add(new TermQuery(new Term("contents", term)), Occur.FILTER);
        if (!owner) {
          b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
        }
        g.writeNumberField(term, searcher.count(b.build()));
      }
      g.writeEndObject();
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }

  /** {@code user}'s messages by id ({@code ids}: a JSON list), with content; missing ids are absent. */
  public byte[] get(String user, String ids) throws IOException {
    List<String> keys = new ArrayList<>();
    for (String id : strings(MAPPER.readTree(ids))) {
      keys.add(user + SEP + id);
    }
    if (keys.isEmpty()) {
      return EMPTY_LIST.clone();
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(termSet("key", keys), Occur.MUST);
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    IndexSearcher searcher = manager.acquire();
    try {
      TopDocs top = searcher.search(b.build(), keys.size());
      return hits(searcher, top.scoreDocs, false, true);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * The queries matching the messages of {@code wanted} (JSON: user -> [session ids]): one clause per user
   * (its user term and a terms query of its sessions), users in chunks so each query stays within Lucene's
   * clause limit (which counts nested clauses too) however many users an import touches. The chunks hold
   * disjoint users, so their matches are disjoint.
   */
  private static List<Query> sessionsOf(JsonNode wanted) {
    List<Query> out = new ArrayList<>();
    int perQuery = Math.max(1, (IndexSearcher.getMaxClauseCount() - 8) / 4);
    BooleanQuery.Builder any = new BooleanQuery.Builder();
    int inChunk = 0;
    java.util.Iterator<Map.Entry<String, JsonNode>> users = wanted.fields();
    while (users.hasNext()) {
      Map.Entry<String, JsonNode> e = users.next();
      List<String> sids = strings(e.getValue());
      if (sids.isEmpty()) {
        continue;
      }
      BooleanQuery.Builder one = new BooleanQuery.Builder();
      one.add(new TermQuery(new Term("user_id", e.getKey())), Occur.FILTER);
      one.add(termSet("session_id", sids), Occur.FILTER);
      any.add(new ConstantScoreQuery(one.build()), Occur.SHOULD);
      if (++inChunk == perQuery) {
        out.add(any.build());
        any = new BooleanQuery.Builder();
        inChunk = 0;
      }
    }
    if (inChunk > 0) {
      out.add(any.build());
    }
    return out;
  }

  /** Every live document matching any of {@code queries} (disjoint), as global doc ids in index order. */
  private static List<Integer> allDocs(IndexSearcher searcher, List<Query> queries) throws IOException {
    List<Integer> out = new ArrayList<>();
    for (Query q : queries) {
      out.addAll(allDocs(searcher, q));
    }
    if (queries.size() > 1) {
      java.util.Collections.sort(out);
    }
    return out;
  }

  /** Every live document matching {@code query}, as global doc ids in index order (no scoring, no limit). */
  private static List<Integer> allDocs(IndexSearcher searcher, Query query) throws IOException {
    List<Integer> out = new ArrayList<>();
    org.apache.lucene.search.Weight w =
        searcher.createWeight(searcher.rewrite(query), org.apache.lucene.search.ScoreMode.COMPLETE_NO_SCORES, 1f);
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      org.apache.lucene.search.Scorer scorer = w.scorer(leaf);
      if (scorer == null) {
        continue;
      }
      org.apache.lucene.util.Bits live = leaf.reader().getLiveDocs();
      org.apache.lucene.search.DocIdSetIterator it = scorer.iterator();
      for (int d = it.nextDoc(); d != org.apache.lucene.search.DocIdSetIterator.NO_MORE_DOCS; d = it.nextDoc()) {
        if (live == null || live.get(d)) {
          out.add(leaf.docBase + d);
        }
      }
    }
    return out;
  }

  /**
   * What a writer needs to know of stored sessions ({@code wanted}: JSON user -> [session ids]): JSON user
   * -> session -> {"tail": its last turn with content, or null; "text": its stored whole text, or null}.
   * Sessions with neither are left out.
   */
  public String sessionStates(String wanted) throws IOException {
    JsonNode want = MAPPER.readTree(wanted);
    IndexSearcher searcher = manager.acquire();
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      // the last turn of each: one pass over the sessions' messages, reading doc values
      Map<String, int[]> tail = new HashMap<>(); // user SEP session -> {turn, global doc}
      List<Integer> docs = allDocs(searcher, sessionsOf(want));
      List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
      int leafIndex = -1;
      SortedDocValues users = null;
      SortedDocValues sessions = null;
      NumericDocValues turns = null;
      LeafReaderContext leaf = null;
      for (int global : docs) { // in index order: doc values read forwards
        int li = ReaderUtil.subIndex(global, leaves);
        if (li != leafIndex) {
          leafIndex = li;
          leaf = leaves.get(li);
          users = DocValues.getSorted(leaf.reader(), "user_dv");
          sessions = DocValues.getSorted(leaf.reader(), "session_id");
          turns = DocValues.getNumeric(leaf.reader(), "turn");
        }
        int d = global - leaf.docBase;
        String u = users.advanceExact(d) ? users.lookupOrd(users.ordValue()).utf8ToString() : "";
        String sid = sessions.advanceExact(d) ? sessions.lookupOrd(sessions.ordValue()).utf8ToString() : "";
        int turn = turns.advanceExact(d) ? (int) turns.longValue() : 0;
        int[] best = tail.get(u + SEP + sid);
        if (best == null || turn > best[0]) {
          tail.put(u + SEP + sid, new int[] {turn, global});
        }
      }
      List<String> textKeys = new ArrayList<>();
      java.util.Iterator<Map.Entry<String, JsonNode>> it = want.fields();
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        for (String sid : strings(e.getValue())) {
          textKeys.add(sessionKey("session-text", e.getKey(), sid));
        }
      }
      Map<String, String> texts = new HashMap<>();
      if (!textKeys.isEmpty()) {
        TopDocs tops = searcher.search(termSet("key", textKeys), textKeys.size());
        StoredFields stored = searcher.storedFields();
        for (ScoreDoc sd : tops.scoreDocs) {
          Document d = stored.document(sd.doc);
          texts.put(d.get("t_user") + SEP + d.get("t_session"), d.get("s_text"));
        }
      }
      g.writeStartObject();
      it = want.fields();
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        g.writeObjectFieldStart(e.getKey());
        for (String sid : new java.util.LinkedHashSet<>(strings(e.getValue()))) {
          String k = e.getKey() + SEP + sid;
          int[] best = tail.get(k);
          String text = texts.get(k);
          if (best == null && text == null) {
            continue;
          }
          g.writeObjectFieldStart(sid);
          g.writeFieldName("tail");
          if (best == null) {
            g.writeNull();
          } else {
            read(searcher, new ScoreDoc[] {new ScoreDoc(best[1], 0f)}, true).get(0).write(g);
          }
          if (text == null) {
            g.writeNullField("text");
          } else {
            g.writeStringField("text", text);
          }
          g.writeEndObject();
        }
        g.writeEndObject();
      }
      g.writeEndObject();
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }

  /**
   * Which of the ids in {@code wanted} (JSON user -> [message ids]) are stored: JSON user -> [hits without
   * content (id, session, turn, time, role)].
   */
  public String existing(String wanted) throws IOException {
    JsonNode want = MAPPER.readTree(wanted);
    List<String> keys = new ArrayList<>();
    java.util.Iterator<Map.Entry<String, JsonNode>> it = want.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      for (String id : strings(e.getValue())) {
        keys.add(e.getKey() + SEP + id);
      }
    }
    StringWriter out = new StringWriter();
    IndexSearcher searcher = manager.acquire();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      if (!keys.isEmpty()) {
        List<Integer> docs = allDocs(searcher, termSet("key", keys));
        ScoreDoc[] sds = new ScoreDoc[docs.size()];
        for (int i = 0; i < sds.length; i++) {
          sds[i] = new ScoreDoc(docs.get(i), 0f);
        }
        List<Hit> hits = read(searcher, sds, false);
        String[] users = sortedValues(searcher, sds, "user_dv");
        Map<String, List<Hit>> byUser = new LinkedHashMap<>();
        for (int i = 0; i < sds.length; i++) {
          byUser.computeIfAbsent(users[i], x -> new ArrayList<>()).add(hits.get(i));
        }
        for (Map.Entry<String, List<Hit>> e : byUser.entrySet()) {
          g.writeArrayFieldStart(e.getKey());
          for (Hit h : e.getValue()) {
            h.write(g);
          }
          g.writeEndArray();
        }
      }
      g.writeEndObject();
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }

  /**
   * Every stored turn of the sessions in {@code wanted} (JSON user -> [session ids]), with content: JSON
   * user -> session -> [hits in turn order].
   */
  public String sessionTurns(String wanted) throws IOException {
    JsonNode want = MAPPER.readTree(wanted);
    StringWriter out = new StringWriter();
    IndexSearcher searcher = manager.acquire();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      List<Integer> docs = allDocs(searcher, sessionsOf(want));
      ScoreDoc[] sds = new ScoreDoc[docs.size()];
      for (int i = 0; i < sds.length; i++) {
        sds[i] = new ScoreDoc(docs.get(i), 0f);
      }
      List<Hit> hits = read(searcher, sds, true);
      String[] users = sortedValues(searcher, sds, "user_dv");
      Map<String, Map<String, List<Hit>>> grouped = new LinkedHashMap<>();
      for (int i = 0; i < sds.length; i++) {
        grouped
            .computeIfAbsent(users[i], x -> new LinkedHashMap<>())
            .computeIfAbsent(hits.get(i).session, x -> new ArrayList<>())
            .add(hits.get(i));
      }
      g.writeStartObject();
      for (Map.Entry<String, Map<String, List<Hit>>> u : grouped.entrySet()) {
        g.writeObjectFieldStart(u.getKey());
        for (Map.Entry<String, List<Hit>> e : u.getValue().entrySet()) {
          e.getValue().sort(Comparator.comparingInt(h -> h.turn));
          g.writeArrayFieldStart(e.getKey());
          for (Hit h : e.getValue()) {
            h.write(g);
          }
          g.writeEndArray();
        }
        g.writeEndObject();
      }
      g.writeEndObject();
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }

  /** The payload stored with {@code user}'s {@code requestId}, or null. */
  public String requestMarker(String user, String requestId) throws IOException {
    String key = SEP + "request" + SEP + user + SEP + requestId;
    IndexSearcher searcher = manager.acquire();
    try {
      TopDocs top = searcher.search(new TermQuery(new Term("key", key)), 1);
      if (top.scoreDocs.length == 0) {
        return null;
      }
      return searcher.storedFields().document(top.scoreDocs[0].doc).get("raw");
    } finally {
      manager.release(searcher);
    }
  }

  /** Messages of {@code user}, or of the whole index when {@code user} is null. */
  public long count(String user) throws IOException {
    Query q =
        user != null ? new TermQuery(new Term("user_id", user)) : new TermQuery(new Term("kind", "m"));
    IndexSearcher searcher = manager.acquire();
    try {
      return searcher.count(q);
    } finally {
      manager.release(searcher);
    }
  }

  /** User ids with at least one message, sorted (a JSON list). */
  public String users() throws IOException {
    IndexSearcher searcher = manager.acquire();
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      Terms terms = MultiTerms.getTerms(searcher.getIndexReader(), "user_id");
      if (terms != null) {
        TermsEnum it = terms.iterator();
        for (BytesRef ref = it.next(); ref != null; ref = it.next()) {
          String user = ref.utf8ToString();
          if (searcher.count(new TermQuery(new Term("user_id", user))) > 0) {
            g.writeString(user);
          }
        }
      }
      g.writeEndArray();
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }

  // ------------------------------------------------------------------------------------------ hits

  private static final class Hit {
    String id;
    String session;
    int turn;
    long ts;
    String role;
    float score;
    String raw; // the stored message, when read with content

    void write(JsonGenerator g) throws IOException {
      g.writeStartObject();
      g.writeStringField("id", id);
      g.writeStringField("session_id", session);
      g.writeNumberField("turn", turn);
      g.writeNumberField("ts", ts);
      g.writeStringField("role", role);
      g.writeNumberField("score", score);
      if (raw != null) {
        g.writeFieldName("raw");
        g.writeRawValue(raw);
      }
      g.writeEndObject();
    }
  }

  private byte[] hits(IndexSearcher searcher, ScoreDoc[] docs, boolean scored, boolean content)
      throws IOException {
    List<Hit> hits = read(searcher, docs, content);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      for (Hit h : hits) {
        if (!scored) {
          h.score = 0f;
        }
        h.write(g);
      }
      g.writeEndArray();
    }
    return out.toByteArray();
  }

  /** The hit fields of {@code docs} (in their order) from doc values, and the stored message with content. */
  private List<Hit> read(IndexSearcher searcher, ScoreDoc[] docs, boolean content) throws IOException {
    List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
    Hit[] out = new Hit[docs.length];
    Integer[] order = new Integer[docs.length];
    for (int i = 0; i < docs.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparingInt(i -> docs[i].doc)); // doc values read forwards
    int leafIndex = -1;
    BinaryDocValues ids = null;
    SortedDocValues sessions = null;
    SortedDocValues roles = null;
    NumericDocValues turns = null;
    NumericDocValues times = null;
    LeafReaderContext leaf = null;
    for (int i : order) {
      int global = docs[i].doc;
      int li = ReaderUtil.subIndex(global, leaves);
      if (li != leafIndex) {
        leafIndex = li;
        leaf = leaves.get(li);
        ids = DocValues.getBinary(leaf.reader(), "id");
        sessions = DocValues.getSorted(leaf.reader(), "session_id");
        roles = DocValues.getSorted(leaf.reader(), "role_dv");
        turns = DocValues.getNumeric(leaf.reader(), "turn");
        times = DocValues.getNumeric(leaf.reader(), "ts");
      }
      int d = global - leaf.docBase;
      Hit h = new Hit();
      h.id = ids.advanceExact(d) ? ids.binaryValue().utf8ToString() : "";
      h.session = sessions.advanceExact(d) ? sessions.lookupOrd(sessions.ordValue()).utf8ToString() : "";
      h.role = roles.advanceExact(d) ? roles.lookupOrd(roles.ordValue()).utf8ToString() : "";
      h.turn = turns.advanceExact(d) ? (int) turns.longValue() : 0;
      h.ts = times.advanceExact(d) ? times.longValue() : 0L;
      h.score = docs[i].score;
      out[i] = h;
    }
    if (content) {
      StoredFields stored = null;
      for (int i : order) {
        LeafReaderContext at = leaves.get(ReaderUtil.subIndex(docs[i].doc, leaves));
        org.apache.lucene.index.IndexReader.CacheHelper helper = at.reader().getCoreCacheHelper();
        Object core = helper != null ? helper.getKey() : null;
        int d = docs[i].doc - at.docBase;
        String raw = core != null ? RAW_CACHE.get(core, d) : null;
        if (raw == null) {
          if (stored == null) {
            stored = searcher.storedFields();
          }
          raw = stored.document(docs[i].doc, java.util.Set.of("raw")).get("raw");
          if (core != null) {
            RAW_CACHE.put(core, d, raw);
          }
        }
        out[i].raw = raw;
      }
    }
    return new ArrayList<>(Arrays.asList(out));
  }

  /**
   * Stored messages recently read, by segment and document: a search's rounds read the same turns again
   * (windows around new hits overlap those around earlier ones), and decompressing stored fields was most
   * of a window's cost. Segments never change (a replaced message is a new document), so entries stay true;
   * the oldest go once the cache holds about {@link #RAW_CACHE_CHARS} characters.
   */
  private static final RawCache RAW_CACHE = new RawCache();

  private static final long RAW_CACHE_CHARS = 32L << 20;

  private static final class RawCache {
    private record Key(Object core, int doc) {}

    private final LinkedHashMap<Key, String> map = new LinkedHashMap<>(4096, 0.75f, true);
    private long chars;

    synchronized String get(Object core, int doc) {
      return map.get(new Key(core, doc));
    }

    synchronized void put(Object core, int doc, String raw) {
      if (raw == null || raw.length() > RAW_CACHE_CHARS / 64) {
        return; // a huge message is read when needed, never kept
      }
      if (map.put(new Key(core, doc), raw) == null) {
        chars += raw.length();
      }
      java.util.Iterator<Map.Entry<Key, String>> it = map.entrySet().iterator();
      while (chars > RAW_CACHE_CHARS && it.hasNext()) {
        chars -= it.next().getValue().length();
        it.remove();
      }
    }
  }

  /** The {@code field} (sorted doc values) of each of {@code docs}, read forwards once per segment. */
  private static String[] sortedValues(IndexSearcher searcher, ScoreDoc[] docs, String field)
      throws IOException {
    List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
    String[] out = new String[docs.length];
    Integer[] order = new Integer[docs.length];
    for (int i = 0; i < docs.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparingInt(i -> docs[i].doc)); // doc values are read forwards
    int leafIndex = -1;
    LeafReaderContext leaf = null;
    SortedDocValues dv = null;
    for (int i : order) {
      int li = ReaderUtil.subIndex(docs[i].doc, leaves);
      if (li != leafIndex) {
        leafIndex = li;
        leaf = leaves.get(li);
        dv = DocValues.getSorted(leaf.reader(), field);
      }
      int d = docs[i].doc - leaf.docBase;
      out[i] = dv.advanceExact(d) ? dv.lookupOrd(dv.ordValue()).utf8ToString() : "";
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------ writing

  /** One reusable message document with mutable fields: creating Java objects per message is slow. */
  static final class MessageDoc {
    final StringField key = new StringField("key", "", Field.Store.NO);
    final StringField kind = new StringField("kind", "m", Field.Store.NO);
    // fields keep the structure older formats gave them (Lucene refuses a change within an index): the id
    // is still indexed, as format 1 did, and "added" still has doc values, as format 2 did
    final StringField id = new StringField("id", "", Field.Store.NO);
    final BinaryDocValuesField idDv = new BinaryDocValuesField("id", new BytesRef()); // for pyserini
    final StringField user = new StringField("user_id", "", Field.Store.NO);
    final SortedDocValuesField userDv = new SortedDocValuesField("user_dv", new BytesRef());
    final StringField session = new StringField("session_id", "", Field.Store.NO);
    final SortedDocValuesField sessionDv = new SortedDocValuesField("session_id", new BytesRef());
    final IntPoint turnPt = new IntPoint("turn", 0);
    final NumericDocValuesField turnDv = new NumericDocValuesField("turn", 0);
    final LongPoint tsPt = new LongPoint("ts", 0);
    final NumericDocValuesField tsDv = new NumericDocValuesField("ts", 0);
    final LongPoint addedPt = new LongPoint("added", 0);
    final NumericDocValuesField addedDv = new NumericDocValuesField("added", 0);
    final StringField role = new StringField("role", "", Field.Store.NO);
    final SortedDocValuesField roleDv = new SortedDocValuesField("role_dv", new BytesRef());
    final TermsStream terms = new TermsStream();
    final Field contents;
    final StoredField raw = new StoredField("raw", "");
    // what the message says that stands (issue 37): its kind, indexed only when it has one
    final StringField standing = new StringField("standing", "", Field.Store.NO);
    final Document doc = new Document();

    MessageDoc(org.apache.lucene.document.FieldType textType) {
      contents = new Field("contents", terms, textType);
      for (Field f :
          new Field[] {
            key, kind, id, idDv, user, userDv, session, sessionDv, turnPt, turnDv, tsPt, tsDv, addedPt,
            addedDv, role, roleDv, contents, raw
          }) {
        doc.add(f);
      }
    }

    /**
     * Sets every field for record {@code r} (JSON [user, session, id, turn, ts, role, content, speaker,
     * time_text, replace, standing]; standing: null or absent, or {kind, sentence, domain, subject, change},
     * stored in "raw" and its kind indexed as "standing") whose content was analyzed into {@code analyzed}.
     */
    void fill(JsonNode r, String[] analyzed, long added) throws IOException {
      String u = r.get(0).asText();
      String s = r.get(1).asText();
      String i = r.get(2).asText();
      int t = r.get(3).asInt();
      long ts = r.get(4).asLong();
      String ro = r.get(5).asText();
      String content = r.get(6).asText();
      key.setStringValue(u + SEP + i);
      id.setStringValue(i);
      idDv.setBytesValue(new BytesRef(i));
      user.setStringValue(u);
      userDv.setBytesValue(new BytesRef(u));
      session.setStringValue(s);
      sessionDv.setBytesValue(new BytesRef(s));
      turnPt.setIntValue(t);
      turnDv.setLongValue(t);
      tsPt.setLongValue(ts);
      tsDv.setLongValue(ts);
      addedPt.setLongValue(added);
      addedDv.setLongValue(added);
      role.setStringValue(ro);
      roleDv.setBytesValue(new BytesRef(ro));
      terms.set(analyzed);
      JsonNode st = r.size() > 10 ? r.get(10) : null;
      boolean stands = st != null && st.isObject() && st.hasNonNull("kind");
      doc.removeFields("standing");
      if (stands) {
        standing.setStringValue(st.get("kind").asText());
        doc.add(standing);
      }
      StringWriter w = new StringWriter(content.length() + 96);
      try (JsonGenerator g = JSON.createGenerator(w)) {
        g.writeStartObject();
        g.writeStringField("id", i);
        g.writeStringField("session_id", s);
        g.writeNumberField("turn", t);
        g.writeNumberField("ts", ts);
        g.writeStringField("role", ro);
        g.writeStringField("content", content);
        if (!r.get(7).isNull() && !r.get(7).asText().isEmpty()) {
          g.writeStringField("speaker", r.get(7).asText());
        }
        if (!r.get(8).isNull()) {
          g.writeStringField("time_text", r.get(8).asText());
        }
        if (stands) {
          g.writeFieldName("standing");
          MAPPER.writeTree(g, st);
        }
        g.writeEndObject();
      }
      raw.setStringValue(w.toString());
    }
  }

  /** A token stream over terms analyzed once (a message's, or a session's made of its messages'). */
  static final class TermsStream extends TokenStream {
    private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
    private List<String[]> parts = List.of();
    private int part;
    private int index;

    private String[] only;

    void set(List<String[]> parts) {
      this.parts = parts;
      this.only = null;
    }

    void set(String[] terms) {
      this.only = terms;
    }

    @Override
    public boolean incrementToken() {
      clearAttributes();
      if (only != null) {
        if (index < only.length) {
          term.setEmpty().append(only[index++]);
          return true;
        }
        return false;
      }
      while (part < parts.size()) {
        String[] p = parts.get(part);
        if (index < p.length) {
          term.setEmpty().append(p[index++]);
          return true;
        }
        part++;
        index = 0;
      }
      return false;
    }

    @Override
    public void reset() throws IOException {
      super.reset();
      part = 0;
      index = 0;
    }
  }

  private void checkWritable() {
    if (writer == null) {
      throw new IllegalStateException("read-only");
    }
  }

  /**
   * Writes one batch without committing. JSON: {"added": ms, "records": [[user, session, id, turn, ts,
   * role, content, speaker, time_text, replace], ...], "sessions": [[user, session, text, new, appended],
   * ...], "marker": [user, request id, payload] or null}. A record with replace true replaces the message
   * with its id. A session's text (null: remove its documents) is indexed whole, or, when {@code appended}
   * is n >= 0, as the analysis of its first n characters followed by this batch's records of that session
   * (the text being those characters and their contents joined): every message is analyzed once. {@link
   * #commit} makes everything written so far durable and visible.
   */
  public void write(String batch) throws IOException {
    checkWritable();
    write(MAPPER.readTree(batch));
  }

  /**
   * {@link #write(String)} of the batch as UTF-8 JSON bytes: a byte array crosses the bridge as one copy,
   * where a long String of non-ASCII text is converted character by character (ten times slower measured).
   */
  public void write(byte[] batch) throws IOException {
    checkWritable();
    write(MAPPER.readTree(batch));
  }

  private void write(JsonNode b) throws IOException {
    long added = b.get("added").asLong();
    JsonNode records = b.get("records");
    String[][] analyzed = new String[records.size()][];
    Map<String, List<String[]>> bySession = new HashMap<>();
    for (int i = 0; i < records.size(); i++) { // analysis needs no lock
      JsonNode r = records.get(i);
      analyzed[i] = terms(r.get(6).asText()).toArray(new String[0]);
      bySession.computeIfAbsent(r.get(0).asText() + SEP + r.get(1).asText(), k -> new ArrayList<>()).add(analyzed[i]);
    }
    synchronized (writeLock) {
      for (int i = 0; i < records.size(); i++) {
        JsonNode r = records.get(i);
        doc.fill(r, analyzed[i], added);
        boolean replace = r.get(9).asBoolean(true);
        if (replace) {
          writer.updateDocument(new Term("key", r.get(0).asText() + SEP + r.get(2).asText()), doc.doc);
        } else {
          writer.addDocument(doc.doc);
        }
        if (vectors != null) {
          vectors.onMessage(
              r.get(0).asText(), r.get(2).asText(), r.get(1).asText(), r.get(3).asInt(), r.get(4).asLong(),
              r.get(5).asText(), r.get(6).asText(), replace);
        }
      }
      for (JsonNode s : b.path("sessions")) {
        String user = s.get(0).asText();
        String sid = s.get(1).asText();
        if (s.get(2).isNull()) {
          deleteSession(user, sid);
          continue;
        }
        String text = s.get(2).asText();
        int appended = s.get(4).asInt(-1);
        List<String[]> parts = null;
        if (appended >= 0) {
          parts = new ArrayList<>();
          parts.add(terms(text.substring(0, Math.min(appended, text.length()))).toArray(new String[0]));
          parts.addAll(bySession.getOrDefault(user + SEP + sid, List.of()));
        }
        writeSession(user, sid, text, parts, !s.get(3).asBoolean(false));
      }
      for (JsonNode s : b.path("infos")) {
        writeInfo(s.get(0).asText(), s.get(1).asText(), s.get(2), s.get(3), s.get(4));
      }
      JsonNode m = b.get("marker");
      if (m != null && !m.isNull()) {
        writeMarker(m.get(0).asText(), m.get(1).asText(), m.get(2).asText(), added);
      }
    }
  }

  private void writeSession(String user, String sid, String text, List<String[]> analyzed, boolean update)
      throws IOException {
    if (analyzed == null) {
      analyzed = List.<String[]>of(terms(text).toArray(new String[0]));
    }
    Document[] docs = sessionDocs(user, sid, text, analyzed, textType);
    if (update) {
      writer.updateDocument(new Term("key", sessionKey("session", user, sid)), docs[0]);
      writer.updateDocument(new Term("key", sessionKey("session-text", user, sid)), docs[1]);
    } else {
      writer.addDocument(docs[0]);
      writer.addDocument(docs[1]);
    }
  }

  /**
   * A session's two documents: its analyzed text for session-level BM25 (kind "s", from its messages' terms
   * {@code analyzed}, in order) and its stored text (kind "t").
   */
  static Document[] sessionDocs(
      String user, String sid, String text, List<String[]> analyzed, org.apache.lucene.document.FieldType textType) {
    String key = sessionKey("session", user, sid);
    String textKey = sessionKey("session-text", user, sid);
    Document d = new Document();
    d.add(new StringField("key", key, Field.Store.NO));
    d.add(new StringField("kind", "s", Field.Store.NO));
    d.add(new StringField("s_user", user, Field.Store.NO));
    d.add(new StringField("s_session", sid, Field.Store.NO));
    d.add(new SortedDocValuesField("s_session_dv", new BytesRef(sid)));
    TermsStream stream = new TermsStream();
    stream.set(analyzed);
    d.add(new Field("s_contents", stream, textType));
    Document t = new Document();
    t.add(new StringField("key", textKey, Field.Store.NO));
    t.add(new StringField("kind", "t", Field.Store.NO));
    t.add(new StringField("s_user", user, Field.Store.NO));
    t.add(new StoredField("t_user", user));
    t.add(new StoredField("t_session", sid));
    t.add(new StoredField("s_text", text));
    return new Document[] {d, t};
  }

  /**
   * The "key" term of {@code user}'s session {@code sid}'s document of {@code kind} ("session",
   * "session-text", "session-info"): the term every write and delete of that document names.
   */
  private static String sessionKey(String kind, String user, String sid) {
    return SEP + kind + SEP + user + SEP + sid;
  }

  private void deleteSession(String user, String sid) throws IOException {
    writer.deleteDocuments(
        new Term("key", sessionKey("session", user, sid)),
        new Term("key", sessionKey("session-text", user, sid)),
        new Term("key", sessionKey("session-info", user, sid)));
  }

  private static String textOrNull(JsonNode n) {
    return n == null || n.isNull() ? null : n.asText();
  }

  /**
   * A session's info document (kind "i"): its title (analyzed, for title search), source and project (exact
   * terms, for filters), all three stored as JSON. Replaces the one stored.
   */
  private void writeInfo(String user, String sid, JsonNode title, JsonNode source, JsonNode project)
      throws IOException {
    String key = sessionKey("session-info", user, sid);
    Document d = new Document();
    d.add(new StringField("key", key, Field.Store.NO));
    d.add(new StringField("kind", "i", Field.Store.NO));
    d.add(new StringField("s_user", user, Field.Store.NO));
    d.add(new StringField("i_session", sid, Field.Store.NO));
    d.add(new SortedDocValuesField("i_session_dv", new BytesRef(sid)));
    String t = textOrNull(title);
    if (t != null) {
      TermsStream stream = new TermsStream();
      stream.set(terms(t).toArray(new String[0]));
      d.add(new Field("i_title", stream, TextField.TYPE_NOT_STORED));
    }
    StringWriter raw = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(raw)) {
      g.writeStartArray();
      g.writeString(sid);
      g.writeString(t);
      g.writeString(textOrNull(source));
      g.writeString(textOrNull(project));
      g.writeEndArray();
    }
    d.add(new StoredField("i_raw", raw.toString()));
    writer.updateDocument(new Term("key", key), d);
  }

  /**
   * The info of {@code user}'s sessions ({@code sessionIds}: a JSON list, or empty for all of them): a JSON
   * list of [session, title, source, project].
   */
  public String sessionInfos(String user, String sessionIds) throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("kind", "i")), Occur.FILTER);
    b.add(new TermQuery(new Term("s_user", user)), Occur.FILTER);
    if (sessionIds != null && !sessionIds.isEmpty()) {
      b.add(termSet("i_session", strings(MAPPER.readTree(sessionIds))), Occur.FILTER);
    }
    IndexSearcher searcher = manager.acquire();
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      StoredFields stored = searcher.storedFields();
      for (int d : allDocs(searcher, b.build())) {
        g.writeRawValue(stored.document(d).get("i_raw"));
      }
      g.writeEndArray();
    } finally {
      manager.release(searcher);
    }
    return out.toString();
  }

  /** BM25 over the titles of {@code user}'s sessions (restricted to {@code sessionIds} when given). */
  public String searchTitles(String user, String text, int k, String sessionIds) throws IOException {
    List<String> only =
        sessionIds != null && !sessionIds.isEmpty() ? strings(MAPPER.readTree(sessionIds)) : null;
    IndexSearcher searcher = manager.acquire();
    try {
      return scoredJson(rankSessions(searcher, user, bagQuery("i_title", text), k, only, "i_title"));
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * Every session of {@code user} with messages, from its messages' doc values: a JSON list of [session,
   * messages, first time, last time], in the order the sessions' first messages were written.
   */
  public String sessionSummaries(String user) throws IOException {
    IndexSearcher searcher = manager.acquire();
    Map<String, long[]> by = new LinkedHashMap<>();
    try {
      List<Integer> docs = allDocs(searcher, new TermQuery(new Term("user_id", user)));
      List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
      int leafIndex = -1;
      SortedDocValues sessions = null;
      NumericDocValues times = null;
      LeafReaderContext leaf = null;
      for (int global : docs) {
        int li = ReaderUtil.subIndex(global, leaves);
        if (li != leafIndex) {
          leafIndex = li;
          leaf = leaves.get(li);
          sessions = DocValues.getSorted(leaf.reader(), "session_id");
          times = DocValues.getNumeric(leaf.reader(), "ts");
        }
        int d = global - leaf.docBase;
        String sid = sessions.advanceExact(d) ? sessions.lookupOrd(sessions.ordValue()).utf8ToString() : "";
        long ts = times.advanceExact(d) ? times.longValue() : 0L;
        long[] acc = by.get(sid);
        if (acc == null) {
          by.put(sid, new long[] {1, ts, ts});
        } else {
          acc[0]++;
          acc[1] = Math.min(acc[1], ts);
          acc[2] = Math.max(acc[2], ts);
        }
      }
    } finally {
      manager.release(searcher);
    }
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartArray();
      for (Map.Entry<String, long[]> e : by.entrySet()) {
        g.writeStartArray();
        g.writeString(e.getKey());
        g.writeNumber(e.getValue()[0]);
        g.writeNumber(e.getValue()[1]);
        g.writeNumber(e.getValue()[2]);
        g.writeEndArray();
      }
      g.writeEndArray();
    }
    return out.toString();
  }

  /**
   * Deletes one session of {@code user}: its messages, session documents and info, durably (with every
   * write before it). Returns the messages removed.
   */
  public long deleteSessionOf(String user, String sid) throws IOException {
    checkWritable();
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    b.add(new TermQuery(new Term("session_id", sid)), Occur.FILTER);
    Query messages = b.build();
    long before;
    IndexSearcher searcher = manager.acquire();
    try {
      before = searcher.count(messages);
    } finally {
      manager.release(searcher);
    }
    synchronized (writeLock) {
      writer.deleteDocuments(messages);
      deleteSession(user, sid);
      if (vectors != null) {
        vectors.deleteSession(user, sid);
      }
      commit(); // under the lock: no vector of the session is written in between
    }
    return before;
  }

  private void writeMarker(String user, String requestId, String payload, long added) throws IOException {
    String key = SEP + "request" + SEP + user + SEP + requestId;
    Document d = new Document();
    d.add(new StringField("key", key, Field.Store.NO));
    d.add(new StringField("kind", "r", Field.Store.NO));
    d.add(new StringField("req_user", user, Field.Store.NO));
    d.add(new LongPoint("added", added));
    d.add(new NumericDocValuesField("added", added));
    d.add(new StoredField("raw", payload));
    writer.updateDocument(new Term("key", key), d);
  }

  /**
   * Makes every write so far durable (fsync) and visible to the next search: the vector index first (a
   * message's queue entry is durable before the message), then the messages.
   */
  public void commit() throws IOException {
    checkWritable();
    synchronized (writeLock) {
      if (vectors != null) {
        vectors.commit();
      }
      writer.commit();
      manager.maybeRefreshBlocking(); // under the lock: a vector is checked against what is committed
      if (vectors != null) {
        vectors.settled();
      }
    }
  }

  /** Refreshes a read-only engine to the latest commit (a writer's engine is always current). */
  public void refresh() throws IOException {
    manager.maybeRefresh();
    if (vectors != null) {
      vectors.refresh();
    }
  }

  /**
   * The version of the index searches see now: it changes whenever a write becomes visible to them, so a
   * result computed from the index at one version holds as long as the version does.
   */
  public long version() throws IOException {
    IndexSearcher searcher = manager.acquire();
    try {
      return ((DirectoryReader) searcher.getIndexReader()).getVersion();
    } finally {
      manager.release(searcher);
    }
  }

  /** Deletes every message, session document and request marker of {@code user}, durably. */
  public long deleteUser(String user) throws IOException {
    checkWritable();
    long before = count(user);
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("user_id", user)), Occur.SHOULD);
    b.add(new TermQuery(new Term("req_user", user)), Occur.SHOULD);
    b.add(new TermQuery(new Term("s_user", user)), Occur.SHOULD);
    synchronized (writeLock) {
      writer.deleteDocuments(b.build());
      if (vectors != null) {
        vectors.deleteUser(user);
      }
      commit();
    }
    return before;
  }

  /**
   * Retention, without committing: deletes every message and request marker added before {@code cutoff}.
   * Returns JSON {"removed": n, "sessions": [[user, session, [remaining turns' contents in turn order]],
   * ...]} for every session that lost a message, so the caller can rewrite their session documents before
   * committing.
   */
  public String expire(long cutoff) throws IOException {
    checkWritable();
    BooleanQuery.Builder old = new BooleanQuery.Builder();
    old.add(LongPoint.newRangeQuery("added", Long.MIN_VALUE, cutoff - 1), Occur.SHOULD);
    Query expired = old.build();
    Query messages = kindAnd("m", expired);
    Query markers = kindAnd("r", expired);
    StringWriter out = new StringWriter();
    synchronized (writeLock) {
      IndexSearcher searcher = manager.acquire();
      try {
        int n = searcher.count(messages);
        Map<String, String[]> affected = new LinkedHashMap<>(); // user SEP session -> {user, session}
        List<String> keys = new ArrayList<>(); // user SEP id: their vectors go with them
        if (n > 0) {
          TopDocs top = searcher.search(messages, n);
          List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
          for (ScoreDoc sd : top.scoreDocs) {
            LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(sd.doc, leaves));
            SortedDocValues u = DocValues.getSorted(leaf.reader(), "user_dv");
            SortedDocValues s = DocValues.getSorted(leaf.reader(), "session_id");
            BinaryDocValues ids = DocValues.getBinary(leaf.reader(), "id");
            int d = sd.doc - leaf.docBase;
            String user = u.advanceExact(d) ? u.lookupOrd(u.ordValue()).utf8ToString() : "";
            String sid = s.advanceExact(d) ? s.lookupOrd(s.ordValue()).utf8ToString() : "";
            affected.putIfAbsent(user + SEP + sid, new String[] {user, sid});
            keys.add(user + SEP + (ids.advanceExact(d) ? ids.binaryValue().utf8ToString() : ""));
          }
        }
        if (vectors != null) {
          vectors.deleteKeys(keys);
        }
        try (JsonGenerator g = JSON.createGenerator(out)) {
          g.writeStartObject();
          g.writeNumberField("removed", n);
          g.writeArrayFieldStart("sessions");
          for (String[] us : affected.values()) {
            BooleanQuery.Builder keep = new BooleanQuery.Builder();
            keep.add(new TermQuery(new Term("user_id", us[0])), Occur.FILTER);
            keep.add(new TermQuery(new Term("session_id", us[1])), Occur.FILTER);
            keep.add(expired, Occur.MUST_NOT);
            int left = searcher.count(keep.build());
            List<Hit> remaining =
                left == 0 ? new ArrayList<>() : read(searcher, searcher.search(keep.build(), left).scoreDocs, true);
            remaining.sort(Comparator.comparingInt(h -> h.turn));
            g.writeStartArray();
            g.writeString(us[0]);
            g.writeString(us[1]);
            g.writeStartArray();
            for (Hit h : remaining) {
              g.writeString(MAPPER.readTree(h.raw).get("content").asText());
            }
            g.writeEndArray();
            g.writeEndArray();
          }
          g.writeEndArray();
          g.writeEndObject();
        }
        if (n > 0 || searcher.count(markers) > 0) {
          writer.deleteDocuments(messages);
          writer.deleteDocuments(markers);
        }
      } finally {
        manager.release(searcher);
      }
    }
    return out.toString();
  }

  private static Query kindAnd(String kind, Query q) {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("kind", kind)), Occur.FILTER);
    b.add(q, Occur.FILTER);
    return b.build();
  }

  /**
   * Rewrites every message, session text and request marker of an older format in this one, from what it
   * stored (messages: "raw"; markers: their key and payload); those without an "added" time (format 1)
   * get {@code legacyAdded}. Not committed. Returns how many documents were rewritten.
   */
  public long upgrade(long legacyAdded) throws IOException {
    checkWritable();
    long n = 0;
    synchronized (writeLock) {
      IndexSearcher searcher = manager.acquire();
      try {
        StoredFields stored = searcher.storedFields();
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        int messages = searcher.count(new TermQuery(new Term("kind", "m")));
        if (messages > 0) {
          TopDocs all = searcher.search(new TermQuery(new Term("kind", "m")), messages);
          for (ScoreDoc sd : all.scoreDocs) {
            Document old = stored.document(sd.doc);
            JsonNode raw = MAPPER.readTree(old.get("raw"));
            LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(sd.doc, leaves));
            NumericDocValues added = leaf.reader().getNumericDocValues("added");
            int d = sd.doc - leaf.docBase;
            long when = added != null && added.advanceExact(d) ? added.longValue() : legacyAdded;
            com.fasterxml.jackson.databind.node.ArrayNode r = MAPPER.createArrayNode();
            r.add(old.get("user_id"));
            r.add(raw.get("session_id").asText());
            r.add(raw.get("id").asText());
            r.add(raw.get("turn").asInt());
            r.add(raw.get("ts").asLong());
            r.add(raw.get("role").asText());
            r.add(raw.get("content").asText());
            r.add(raw.hasNonNull("speaker") ? raw.get("speaker").asText() : null);
            r.add(raw.hasNonNull("time_text") ? raw.get("time_text").asText() : null);
            r.add(true);
            r.add(raw.hasNonNull("standing") ? raw.get("standing") : null);
            doc.fill(r, terms(raw.get("content").asText()).toArray(new String[0]), when);
            writer.updateDocument(new Term("key", old.get("user_id") + SEP + raw.get("id").asText()), doc.doc);
            n++;
          }
        }
        Terms keys = MultiTerms.getTerms(searcher.getIndexReader(), "key");
        if (keys != null) {
          // session texts: rewritten with their session id stored and the session document beside them
          String textPrefix = SEP + "session-text" + SEP;
          TermsEnum st = keys.iterator();
          if (st.seekCeil(new BytesRef(textPrefix)) != TermsEnum.SeekStatus.END) {
            for (BytesRef ref = st.term(); ref != null; ref = st.next()) {
              String key = ref.utf8ToString();
              if (!key.startsWith(textPrefix)) {
                break;
              }
              TopDocs top = searcher.search(new TermQuery(new Term("key", key)), 1);
              if (top.scoreDocs.length == 0) {
                continue;
              }
              String[] parts = key.substring(textPrefix.length()).split(SEP, 2);
              writeSession(parts[0], parts[1], stored.document(top.scoreDocs[0].doc).get("s_text"), null, true);
              n++;
            }
          }
          String prefix = SEP + "request" + SEP;
          TermsEnum it = keys.iterator();
          if (it.seekCeil(new BytesRef(prefix)) != TermsEnum.SeekStatus.END) {
            for (BytesRef ref = it.term(); ref != null; ref = it.next()) {
              String key = ref.utf8ToString();
              if (!key.startsWith(prefix)) {
                break;
              }
              TopDocs top = searcher.search(new TermQuery(new Term("key", key)), 1);
              if (top.scoreDocs.length == 0) {
                continue;
              }
              String[] parts = key.substring(prefix.length()).split(SEP, 2);
              int doc = top.scoreDocs[0].doc;
              String payload = stored.document(doc).get("raw");
              LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(doc, leaves));
              NumericDocValues added = leaf.reader().getNumericDocValues("added");
              long when =
                  added != null && added.advanceExact(doc - leaf.docBase) ? added.longValue() : legacyAdded;
              writeMarker(parts[0], parts[1], payload, when);
              n++;
            }
          }
        }
      } finally {
        manager.release(searcher);
      }
    }
    return n;
  }

  @Override
  public void close() throws IOException {
    try {
      if (vectors != null) {
        vectors.close();
      }
    } finally {
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

  /** A stored message by key (user SEP id), as of the last commit: [token, session, turn, ts, role, content]. */
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
        throw unchecked(e);
      }
    }

    private Document doc(String key) throws IOException {
      TopDocs top = searcher.search(new TermQuery(new Term("key", key)), 1);
      return top.scoreDocs.length == 0 ? null : searcher.storedFields().document(top.scoreDocs[0].doc);
    }

    @Override
    public Object[] find(String key) throws IOException {
      Document d = doc(key);
      if (d == null || d.get("raw") == null) {
        return null;
      }
      JsonNode raw = MAPPER.readTree(d.get("raw"));
      String content = raw.get("content").asText();
      return new Object[] {
        Vectors.token(content), raw.get("session_id").asText(), raw.get("turn").asInt(), raw.get("ts").asLong(),
        raw.get("role").asText(), content
      };
    }

    @Override
    public void close() throws IOException {
      manager.release(searcher);
    }
  }

  /**
   * The k nearest of {@code user}'s vectors to {@code vector} within {@code filters} (JSON, as {@link
   * #search} takes them, without any_terms): a JSON list of hits without content, best first.
   */
  public byte[] knn(String user, float[] vector, int k, String filters) throws IOException {
    if (vectors == null || k <= 0) {
      return EMPTY_LIST.clone();
    }
    JsonNode f = filters == null || filters.isEmpty() ? null : MAPPER.readTree(filters);
    try (Lookup messages = new Lookup(manager)) {
      return vectors.knn(user, vector, k, f, messages::stored);
    }
  }

  /** [vectors, pending] of {@code user} (null: everyone), as a JSON list. */
  public String vectorCounts(String user) throws IOException {
    if (vectors == null) {
      return "[0," + count(user) + "]"; // an index from before vectors: every message awaits one
    }
    long[] c = vectors.counts(user);
    return "[" + c[0] + "," + c[1] + "]";
  }

  /** Up to {@code limit} messages awaiting their vector, oldest write first: JSON [[user, id, token, content]]. */
  public byte[] pendingVectors(int limit) throws IOException {
    checkWritable();
    synchronized (writeLock) {
      try (Lookup messages = new Lookup(manager)) {
        return vectors.pending(limit, messages);
      }
    }
  }

  /** Writes vectors (JSON [[user, id, token, [floats]], ...]; not committed); returns how many were written. */
  public int writeVectors(byte[] records) throws IOException {
    checkWritable();
    JsonNode r = MAPPER.readTree(records);
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
  public long queueAll(boolean drop) throws IOException {
    checkWritable();
    long n = 0;
    synchronized (writeLock) {
      if (drop) {
        vectors.deleteAll();
      }
      IndexSearcher searcher = manager.acquire();
      try {
        List<Integer> docs = allDocs(searcher, new TermQuery(new Term("kind", "m")));
        List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
        int leafIndex = -1;
        SortedDocValues users = null;
        SortedDocValues sessions = null;
        BinaryDocValues ids = null;
        LeafReaderContext leaf = null;
        for (int global : docs) {
          int li = ReaderUtil.subIndex(global, leaves);
          if (li != leafIndex) {
            leafIndex = li;
            leaf = leaves.get(li);
            users = DocValues.getSorted(leaf.reader(), "user_dv");
            sessions = DocValues.getSorted(leaf.reader(), "session_id");
            ids = DocValues.getBinary(leaf.reader(), "id");
          }
          int d = global - leaf.docBase;
          String u = users.advanceExact(d) ? users.lookupOrd(users.ordValue()).utf8ToString() : "";
          String sid = sessions.advanceExact(d) ? sessions.lookupOrd(sessions.ordValue()).utf8ToString() : "";
          String id = ids.advanceExact(d) ? ids.binaryValue().utf8ToString() : "";
          vectors.enqueue(u, id, sid);
          n++;
        }
      } finally {
        manager.release(searcher);
      }
    }
    return n;
  }

  /** Unchecked wrapper, for lambdas. */
  static UncheckedIOException unchecked(IOException e) {
    return new UncheckedIOException(e);
  }
}

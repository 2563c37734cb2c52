package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.refind.lucene.Hits.Hit;
import io.refind.lucene.Rounds.Span;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopScoreDocCollector;

/**
 * The reads over sessions: BM25 over whole sessions and over their titles (all of a person's, or among
 * given ones), the turns of any number of spans in one call, the sessions' info and summaries.
 */
final class Sessions extends Searching {
  Sessions(SearcherManager manager, Analysis analysis) {
    super(manager, analysis);
  }

  /** A session ranked by BM25 (of its whole text, or of its title). */
  record Ranked(String session, float score) {}

  /** BM25 over whole sessions of {@code user} (restricted to {@code sessionIds}, a JSON list, when given). */
  String searchSessions(String user, String text, int k, String sessionIds) throws IOException {
    return search(user, text, k, sessionIds, "s_contents");
  }

  /** BM25 over the titles of {@code user}'s sessions (restricted to {@code sessionIds} when given). */
  String searchTitles(String user, String text, int k, String sessionIds) throws IOException {
    return search(user, text, k, sessionIds, "i_title");
  }

  /** {@link #rankSessions} over {@code field} as JSON, with a searcher of its own. */
  private String search(String user, String text, int k, String sessionIds, String field) throws IOException {
    List<String> only =
        sessionIds != null && !sessionIds.isEmpty() ? Wire.strings(Wire.MAPPER.readTree(sessionIds)) : null;
    IndexSearcher searcher = manager.acquire();
    try {
      return Wire.scoredSessions(rankSessions(searcher, user, analysis.bagQuery(field, text), k, only, field));
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * Sessions of {@code user} by BM25 of {@code bag} over their whole text ({@code field} "s_contents") or
   * their title ("i_title"), best first, restricted to {@code only} when not null.
   */
  static List<Ranked> rankSessions(
      IndexSearcher searcher, String user, Query bag, int k, List<String> only, String field)
      throws IOException {
    List<Ranked> out = new ArrayList<>();
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
    if (!Queries.ownsAll(searcher, user, "s_user")) {
      b.add(new TermQuery(new Term("s_user", user)), Occur.FILTER);
    }
    if (only != null) {
      b.add(Queries.termSet(titles ? "i_session" : "s_session", only), Occur.FILTER);
    }
    TopScoreDocCollector collector = TopScoreDocCollector.create(k, k);
    searcher.search(b.build(), collector);
    ScoreDoc[] docs = collector.topDocs().scoreDocs;
    String[] sids = Hits.sortedValues(searcher, docs, titles ? "i_session_dv" : "s_session_dv");
    for (int i = 0; i < docs.length; i++) {
      out.add(new Ranked(sids[i], docs[i].score));
    }
    return out;
  }

  /**
   * {@link #rankSessions} among the sessions {@code only}: their documents found by their ids ({@code
   * idField}, "s_session" or "i_session") and scored by {@code bag}'s scorer, as the collector of the
   * unrestricted query scores them (the same scorer, ties by document). A query with the ids as a filter
   * spent most of its time building that filter.
   */
  private record Candidate(String session, float score, int doc) {}

  private static List<Ranked> rankAmong(
      IndexSearcher searcher, String user, Query bag, int k, List<String> only, String idField)
      throws IOException {
    org.apache.lucene.search.Weight weight =
        searcher.createWeight(searcher.rewrite(bag), org.apache.lucene.search.ScoreMode.TOP_SCORES, 1f);
    List<String> ids = new ArrayList<>(new java.util.LinkedHashSet<>(only));
    List<Candidate> scored = new ArrayList<>();
    // one person's index: every session document is theirs (a segment without any holds no ids either)
    boolean owner = Queries.ownsAll(searcher, user, "s_user");
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      org.apache.lucene.index.PostingsEnum mine = owner ? null : Queries.ownedBy(leaf.reader(), "s_user", user);
      List<int[]> candidates = !owner && mine == null ? List.of() : Queries.docsOf(leaf.reader(), idField, ids);
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
            || (!owner && !Queries.holds(mine, d)) // another user's session of the same id
            || !Queries.holds(it, d) // none of the words
            || (twoPhase != null && !twoPhase.matches())) {
          continue;
        }
        scored.add(new Candidate(ids.get(c[1]), scorer.score(), leaf.docBase + d));
      }
    }
    scored.sort(Comparator.comparingDouble((Candidate e) -> -e.score()).thenComparingInt(Candidate::doc));
    List<Ranked> out = new ArrayList<>();
    for (Candidate e : scored.subList(0, Math.min(k, scored.size()))) {
      out.add(new Ranked(e.session(), e.score()));
    }
    return out;
  }

  /**
   * Several windows of {@code user}'s sessions in one query: {@code spans} is a JSON list of [session,
   * first turn, last turn] ({@code window} records); the result is a JSON list (one per span) of lists of hits with content, in turn
   * order.
   */
  byte[] windows(String user, String spans) throws IOException {
    JsonNode list = Wire.MAPPER.readTree(spans);
    List<Span> wanted = new ArrayList<>();
    for (JsonNode span : list) {
      wanted.add(Wire.window(span));
    }
    IndexSearcher searcher = manager.acquire();
    List<List<Hit>> grouped;
    try {
      grouped = windowHits(searcher, user, wanted);
    } finally {
      manager.release(searcher);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartArray();
      for (List<Hit> group : grouped) {
        Wire.hits(g, group);
      }
      g.writeEndArray();
    }
    return out.toByteArray();
  }

  /**
   * The turns of {@code spans} ([session, first turn, last turn] each) of {@code user}'s sessions with
   * content, one list per span in turn order. Read without a query: in each segment the sessions' posting
   * lists give their documents, the user's posting list (unless {@link Queries#ownsAll}) and the turn doc values
   * keep those of the user within a span; a query per chunk of sessions cost more to build than to run.
   */
  static List<List<Hit>> windowHits(IndexSearcher searcher, String user, List<Span> spans)
      throws IOException {
    List<List<Hit>> grouped = new ArrayList<>();
    Map<String, List<Integer>> bySession = new LinkedHashMap<>();
    for (int i = 0; i < spans.size(); i++) {
      grouped.add(new ArrayList<>());
      Span span = spans.get(i);
      if (Math.min(span.hi(), Integer.MAX_VALUE) >= Math.max(span.lo(), 0)) {
        bySession.computeIfAbsent(span.session(), k -> new ArrayList<>()).add(i);
      }
    }
    if (bySession.isEmpty()) {
      return grouped;
    }
    boolean owner = Queries.ownsAll(searcher, user);
    List<String> sessions = new ArrayList<>(bySession.keySet());
    List<List<Integer>> spansOf = new ArrayList<>(bySession.values());
    List<ScoreDoc> found = new ArrayList<>();
    for (LeafReaderContext leaf : searcher.getIndexReader().leaves()) {
      // one person's index: every message is theirs (a segment without any holds no session ids either)
      org.apache.lucene.index.PostingsEnum mine = owner ? null : Queries.ownedBy(leaf.reader(), "user_id", user);
      if (!owner && mine == null) {
        continue;
      }
      org.apache.lucene.util.Bits live = leaf.reader().getLiveDocs();
      NumericDocValues turns = DocValues.getNumeric(leaf.reader(), "turn");
      for (int[] c : Queries.docsOf(leaf.reader(), "session_id", sessions)) {
        int d = c[0];
        if ((live != null && !live.get(d))
            || (!owner && !Queries.holds(mine, d)) // another user's session of the same id
            || !turns.advanceExact(d)) {
          continue;
        }
        long turn = turns.longValue();
        for (int i : spansOf.get(c[1])) {
          Span span = spans.get(i);
          if (span.lo() <= turn && turn <= span.hi()) {
            found.add(new ScoreDoc(leaf.docBase + d, 0f));
            break;
          }
        }
      }
    }
    // in document order (segments in order, each one's documents sorted): read forwards
    for (Hit h : Hits.read(searcher, found.toArray(new ScoreDoc[0]), true)) {
      h.score = 0f; // a lookup: nothing is ranked
      for (int i : bySession.getOrDefault(h.session, List.of())) {
        Span span = spans.get(i);
        if (span.lo() <= h.turn && h.turn <= span.hi()) {
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
   * The info of {@code user}'s sessions ({@code sessionIds}: a JSON list, or empty for all of them): a JSON
   * list of [session, title, source, project].
   */
  String sessionInfos(String user, String sessionIds) throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("kind", "i")), Occur.FILTER);
    b.add(new TermQuery(new Term("s_user", user)), Occur.FILTER);
    if (sessionIds != null && !sessionIds.isEmpty()) {
      b.add(Queries.termSet("i_session", Wire.strings(Wire.MAPPER.readTree(sessionIds))), Occur.FILTER);
    }
    return json((searcher, g) -> {
      g.writeStartArray();
      StoredFields stored = searcher.storedFields();
      for (int d : Queries.allDocs(searcher, b.build())) {
        g.writeRawValue(stored.document(d).get("i_raw"));
      }
      g.writeEndArray();
    });
  }

  /**
   * Every session of {@code user} with messages, from its messages' doc values: a JSON list of [session,
   * messages, first time, last time], in the order the sessions' first messages were written.
   */
  String sessionSummaries(String user) throws IOException {
    IndexSearcher searcher = manager.acquire();
    Map<String, long[]> by = new LinkedHashMap<>();
    try {
      List<Integer> docs = Queries.allDocs(searcher, new TermQuery(new Term("user_id", user)));
      Hits.Fields m = new Hits.Fields(searcher);
      for (int global : docs) {
        m.to(global);
        String sid = m.session.text();
        long ts = m.ts.number();
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
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartArray();
      for (Map.Entry<String, long[]> e : by.entrySet()) {
        Wire.sessionSummary(g, e.getKey(), e.getValue()[0], e.getValue()[1], e.getValue()[2]);
      }
      g.writeEndArray();
    }
    return out.toString();
  }
}

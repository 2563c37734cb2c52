package io.refind.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.ConstantScoreQuery;
import org.apache.lucene.search.IndexOrDocValuesQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermInSetQuery;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopScoreDocCollector;
import org.apache.lucene.util.BytesRef;

/**
 * The queries every read is built of: the owner filter (left out of a one-person index), the filters of a
 * read (time, sessions, roles, exclusions), the users' sessions of a batched lookup, and the walks over
 * posting lists that replace a query where building one cost more than running it.
 */
final class Queries {
  private Queries() {}

  /**
   * Whether every document of {@code searcher} with a {@code user_id} is {@code user}'s (one person's
   * history, a personal index's common case). Then a query over message text needs no owner filter: only
   * message documents carry {@code contents}, and every message a {@code user_id}, in every index format.
   * Without the filter a query of words alone is a top-level disjunction, which Lucene scores with
   * block-max skipping; a conjunction with a posting list as long as the index must step through it.
   */
  static boolean ownsAll(IndexSearcher searcher, String user) throws IOException {
    return ownsAll(searcher, user, "user_id");
  }

  /**
   * The same for {@code field}: "user_id" (messages, for a query over "contents") or "s_user" (session and
   * title documents, for a query over "s_contents" or "i_title", which only they carry).
   */
  static boolean ownsAll(IndexSearcher searcher, String user, String field) throws IOException {
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
  static final class Searcher extends IndexSearcher {
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

  static TermInSetQuery termSet(String field, Iterable<String> values) {
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
  static Query longRange(String field, long lo, long hi) {
    return new IndexOrDocValuesQuery(
        LongPoint.newRangeQuery(field, lo, hi), NumericDocValuesField.newSlowRangeQuery(field, lo, hi));
  }

  /**
   * {@code b} with the time filter of {@code f} (a read's filters) over {@code field}, when it has one: from
   * "time_from" to "time_to", either open when absent or null.
   */
  static void timeRange(BooleanQuery.Builder b, JsonNode f, String field) {
    JsonNode from = f.get("time_from");
    JsonNode to = f.get("time_to");
    if ((from != null && !from.isNull()) || (to != null && !to.isNull())) {
      long lo = from != null && !from.isNull() ? from.asLong() : Long.MIN_VALUE;
      long hi = to != null && !to.isNull() ? to.asLong() : Long.MAX_VALUE;
      b.add(longRange(field, lo, hi), Occur.FILTER);
    }
  }

  /** {@code q} restricted to documents of {@code kind}. */
  static Query kindAnd(String kind, Query q) {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("kind", kind)), Occur.FILTER);
    b.add(q, Occur.FILTER);
    return b.build();
  }

  /** The JSON filters of a read ({@code filters}: a JSON object, or empty or null for none). */
  static JsonNode filters(String filters) throws IOException {
    return filters == null || filters.isEmpty() ? null : Wire.MAPPER.readTree(filters);
  }

  /**
   * The user filter and {@code filters} (JSON: time_from, time_to, session_ids, roles, exclude_ids,
   * exclude_sessions, any_terms; all optional) around {@code main} (a MUST clause, or none).
   */
  static Query filtered(String user, String filters, Query main) throws IOException {
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    if (main != null) {
      b.add(main, Occur.MUST);
    }
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    return filtered(b, user, filters(filters));
  }

  /** {@code b} with the filters of {@code f} (null: none) added. */
  static Query filtered(BooleanQuery.Builder b, String user, JsonNode f) {
    if (f != null && !f.isNull()) {
      timeRange(b, f, "ts");
      if (f.hasNonNull("session_ids")) {
        b.add(termSet("session_id", Wire.strings(f.get("session_ids"))), Occur.FILTER);
      }
      if (f.hasNonNull("roles")) {
        List<String> roles = new ArrayList<>();
        for (String r : Wire.strings(f.get("roles"))) {
          roles.add(r.toLowerCase(java.util.Locale.ROOT));
        }
        b.add(termSet("role", roles), Occur.FILTER);
      }
      List<String> excluded = Wire.strings(f.get("exclude_ids"));
      if (!excluded.isEmpty()) {
        List<String> keys = new ArrayList<>(excluded.size());
        for (String id : excluded) {
          keys.add(Documents.messageKey(user, id));
        }
        b.add(termSet("key", keys), Occur.MUST_NOT);
      }
      List<String> sessions = Wire.strings(f.get("exclude_sessions"));
      if (!sessions.isEmpty()) {
        b.add(termSet("session_id", sessions), Occur.MUST_NOT);
      }
      if (f.has("any_terms")) { // a hit needs one of these index terms (an empty list admits nothing)
        b.add(termSet("contents", Wire.strings(f.get("any_terms"))), Occur.FILTER);
      }
    }
    return b.build();
  }

  /**
   * The top {@code k} of {@code user}'s messages by {@code bag} (a clause over "contents") within filters
   * {@code f} (null: none), without exact total hits; the user filter is left out when {@link #ownsAll} says
   * it filters nothing.
   */
  static ScoreDoc[] topDocs(IndexSearcher searcher, String user, Query bag, int k, JsonNode f)
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

  /**
   * In one segment, the documents whose {@code field} is one of {@code ids}, as [document, index of its id
   * in {@code ids}] in document order (deleted ones included: the caller checks live documents).
   */
  static List<int[]> docsOf(org.apache.lucene.index.LeafReader reader, String field, List<String> ids)
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
  static org.apache.lucene.index.PostingsEnum ownedBy(
      org.apache.lucene.index.LeafReader reader, String field, String user) throws IOException {
    Terms terms = reader.terms(field);
    if (terms == null) {
      return null;
    }
    TermsEnum te = terms.iterator();
    return te.seekExact(new BytesRef(user)) ? te.postings(null, org.apache.lucene.index.PostingsEnum.NONE) : null;
  }

  /** Whether {@code it} holds document {@code d}, for targets in increasing order. */
  static boolean holds(org.apache.lucene.search.DocIdSetIterator it, int d) throws IOException {
    return it.docID() == d || (it.docID() < d && it.advance(d) == d);
  }

  /**
   * The queries matching the messages of {@code wanted} (JSON: user -> [session ids]): one clause per user
   * (its user term and a terms query of its sessions), users in chunks so each query stays within Lucene's
   * clause limit (which counts nested clauses too) however many users an import touches. The chunks hold
   * disjoint users, so their matches are disjoint.
   */
  static List<Query> usersSessions(JsonNode wanted) {
    List<Query> out = new ArrayList<>();
    int perQuery = Math.max(1, (IndexSearcher.getMaxClauseCount() - 8) / 4);
    BooleanQuery.Builder any = new BooleanQuery.Builder();
    int inChunk = 0;
    java.util.Iterator<Map.Entry<String, JsonNode>> users = wanted.fields();
    while (users.hasNext()) {
      Map.Entry<String, JsonNode> e = users.next();
      List<String> sids = Wire.strings(e.getValue());
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
  static List<Integer> allDocs(IndexSearcher searcher, List<Query> queries) throws IOException {
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
  static List<Integer> allDocs(IndexSearcher searcher, Query query) throws IOException {
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
}

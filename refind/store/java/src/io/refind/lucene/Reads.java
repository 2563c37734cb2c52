package io.refind.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import io.refind.lucene.Hits.Hit;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.util.BytesRef;

/**
 * The reads over messages: BM25 over a person's messages, browsing by filters, lookups by id, term counts,
 * counts and users, and the write side's batched lookups (session states, stored ids, session turns,
 * request markers) for many users at once. Each read acquires a searcher and releases it.
 */
final class Reads extends Searching {
  Reads(SearcherManager manager, Analysis analysis) {
    super(manager, analysis);
  }

  /**
   * BM25 over {@code user}'s messages: the analyzed terms of {@code text} as a bag of words (never query
   * syntax), filters applied before the top {@code k}. A JSON list of hits, best first; with {@code
   * content} each hit carries its stored message ("raw"), else only its doc-value fields.
   */
  byte[] search(String user, String text, int k, String filters, boolean content)
      throws IOException {
    Query bag = analysis.bagQuery("contents", text);
    if (bag == null || k <= 0) {
      return Wire.emptyList();
    }
    JsonNode f = Queries.filters(filters);
    IndexSearcher searcher = manager.acquire();
    try {
      return Hits.json(searcher, Queries.topDocs(searcher, user, bag, k, f), true, content);
    } finally {
      manager.release(searcher);
    }
  }

  /** Messages of {@code user} matching only {@code filters}, newest (or oldest) first, with content. */
  byte[] browse(String user, int k, String filters, boolean newestFirst) throws IOException {
    if (k <= 0) {
      return Wire.emptyList();
    }
    Query query = Queries.filtered(user, filters, new MatchAllDocsQuery());
    IndexSearcher searcher = manager.acquire();
    try {
      Sort sort = new Sort(new SortField("ts", SortField.Type.LONG, newestFirst));
      TopDocs top = searcher.search(query, k, sort);
      return Hits.json(searcher, top.scoreDocs, false, true);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * For each distinct analyzed term of {@code text}: how many of {@code user}'s messages hold it (a JSON
   * object, terms in order).
   */
  String termCounts(String user, String text) throws IOException {
    List<Map.Entry<String, Integer>> bag = analysis.bag(text);
    Map<String, Integer> order = new LinkedHashMap<>();
    for (String t : analysis.terms(text)) {
      order.putIfAbsent(t, 0);
    }
    return json((searcher, g) -> {
      java.util.Set<String> kept = new java.util.HashSet<>();
      for (Map.Entry<String, Integer> e : bag) {
        kept.add(e.getKey());
      }
      g.writeStartObject();
      boolean owner = Queries.ownsAll(searcher, user);
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
    });
  }

  /** {@code user}'s messages by id ({@code ids}: a JSON list), with content; missing ids are absent. */
  byte[] get(String user, String ids) throws IOException {
    List<String> keys = new ArrayList<>();
    for (String id : Wire.strings(Wire.MAPPER.readTree(ids))) {
      keys.add(Documents.messageKey(user, id));
    }
    if (keys.isEmpty()) {
      return Wire.emptyList();
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(Queries.termSet("key", keys), Occur.MUST);
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    IndexSearcher searcher = manager.acquire();
    try {
      TopDocs top = searcher.search(b.build(), keys.size());
      return Hits.json(searcher, top.scoreDocs, false, true);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * What a writer needs to know of stored sessions ({@code wanted}: JSON user -> [session ids]): JSON user
   * -> session -> {"tail": its last turn with content, or null; "text": its stored whole text, or null}.
   * Sessions with neither are left out.
   */
  String sessionStates(String wanted) throws IOException {
    JsonNode want = Wire.MAPPER.readTree(wanted);
    return json((searcher, g) -> {
      // the last turn of each: one pass over the sessions' messages, reading doc values
      Map<String, int[]> tail = new HashMap<>(); // user SEP session -> {turn, global doc}
      List<Integer> docs = Queries.allDocs(searcher, Queries.usersSessions(want));
      Hits.Fields m = new Hits.Fields(searcher);
      for (int global : docs) { // in index order: doc values read forwards
        m.to(global);
        String k = m.user.text() + Documents.SEP + m.session.text();
        int turn = (int) m.turn.number();
        int[] best = tail.get(k);
        if (best == null || turn > best[0]) {
          tail.put(k, new int[] {turn, global});
        }
      }
      List<String> textKeys = new ArrayList<>();
      java.util.Iterator<Map.Entry<String, JsonNode>> it = want.fields();
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        for (String sid : Wire.strings(e.getValue())) {
          textKeys.add(Documents.sessionKey("session-text", e.getKey(), sid));
        }
      }
      Map<String, String> texts = new HashMap<>();
      if (!textKeys.isEmpty()) {
        TopDocs tops = searcher.search(Queries.termSet("key", textKeys), textKeys.size());
        StoredFields stored = searcher.storedFields();
        for (ScoreDoc sd : tops.scoreDocs) {
          Document d = stored.document(sd.doc);
          texts.put(d.get("t_user") + Documents.SEP + d.get("t_session"), d.get("s_text"));
        }
      }
      g.writeStartObject();
      it = want.fields();
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        g.writeObjectFieldStart(e.getKey());
        for (String sid : new java.util.LinkedHashSet<>(Wire.strings(e.getValue()))) {
          String k = e.getKey() + Documents.SEP + sid;
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
            Wire.hit(g, Hits.read(searcher, new ScoreDoc[] {new ScoreDoc(best[1], 0f)}, true).get(0));
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
    });
  }

  /**
   * Which of the ids in {@code wanted} (JSON user -> [message ids]) are stored: JSON user -> [hits without
   * content (id, session, turn, time, role)].
   */
  String existing(String wanted) throws IOException {
    JsonNode want = Wire.MAPPER.readTree(wanted);
    List<String> keys = new ArrayList<>();
    java.util.Iterator<Map.Entry<String, JsonNode>> it = want.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      for (String id : Wire.strings(e.getValue())) {
        keys.add(Documents.messageKey(e.getKey(), id));
      }
    }
    return json((searcher, g) -> {
      g.writeStartObject();
      if (!keys.isEmpty()) {
        List<Integer> docs = Queries.allDocs(searcher, Queries.termSet("key", keys));
        for (Map.Entry<String, List<Hit>> e : hitsByUser(searcher, docs, false).entrySet()) {
          g.writeFieldName(e.getKey());
          Wire.hits(g, e.getValue());
        }
      }
      g.writeEndObject();
    });
  }

  /**
   * Every stored turn of the sessions in {@code wanted} (JSON user -> [session ids]), with content: JSON
   * user -> session -> [hits in turn order].
   */
  String sessionTurns(String wanted) throws IOException {
    JsonNode want = Wire.MAPPER.readTree(wanted);
    return json((searcher, g) -> {
      Map<String, List<Hit>> byUser = hitsByUser(searcher, Queries.allDocs(searcher, Queries.usersSessions(want)), true);
      g.writeStartObject();
      for (Map.Entry<String, List<Hit>> u : byUser.entrySet()) {
        Map<String, List<Hit>> bySession = new LinkedHashMap<>();
        for (Hit h : u.getValue()) {
          bySession.computeIfAbsent(h.session, x -> new ArrayList<>()).add(h);
        }
        g.writeObjectFieldStart(u.getKey());
        for (Map.Entry<String, List<Hit>> e : bySession.entrySet()) {
          e.getValue().sort(Comparator.comparingInt(h -> h.turn));
          g.writeFieldName(e.getKey());
          Wire.hits(g, e.getValue());
        }
        g.writeEndObject();
      }
      g.writeEndObject();
    });
  }

  /**
   * The hits of {@code docs} (global doc ids in index order), with content or without, by user: users in the
   * order of their first hit, each one's hits in index order.
   */
  private static Map<String, List<Hit>> hitsByUser(IndexSearcher searcher, List<Integer> docs, boolean content)
      throws IOException {
    ScoreDoc[] sds = new ScoreDoc[docs.size()];
    for (int i = 0; i < sds.length; i++) {
      sds[i] = new ScoreDoc(docs.get(i), 0f);
    }
    List<Hit> hits = Hits.read(searcher, sds, content);
    String[] users = Hits.sortedValues(searcher, sds, "user_dv");
    Map<String, List<Hit>> byUser = new LinkedHashMap<>();
    for (int i = 0; i < sds.length; i++) {
      byUser.computeIfAbsent(users[i], x -> new ArrayList<>()).add(hits.get(i));
    }
    return byUser;
  }

  /** The payload stored with {@code user}'s {@code requestId}, or null. */
  String requestMarker(String user, String requestId) throws IOException {
    String key = Documents.markerKey(user, requestId);
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
  long count(String user) throws IOException {
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
  String users() throws IOException {
    return json((searcher, g) -> {
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
    });
  }

  /**
   * The version of the index searches see now: it changes whenever a write becomes visible to them, so a
   * result computed from the index at one version holds as long as the version does.
   */
  long version() throws IOException {
    IndexSearcher searcher = manager.acquire();
    try {
      return ((DirectoryReader) searcher.getIndexReader()).getVersion();
    } finally {
      manager.release(searcher);
    }
  }
}

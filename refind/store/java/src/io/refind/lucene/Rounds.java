package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.refind.lucene.Hits.Hit;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.SearcherManager;

/**
 * A whole search round in one call ({@code refind.search.round}, which runs the same steps through the other
 * calls for engines without this one): the query with the read-set, the session ranking, ReFind's fusion
 * (mirroring {@code refind.fusion.fuse_hits}), the spans around the chosen hits and their turns, the
 * analyzed terms and the titles' ranking.
 */
final class Rounds extends Searching {
  Rounds(SearcherManager manager, Analysis analysis) {
    super(manager, analysis);
  }

  /** A hit and its fused score. */
  record Scored(Hit hit, double score) {}

  /** Turns {@code lo} to {@code hi} of a session, and the best fused score of the hits they hold. */
  record Span(String session, long lo, long hi, double best) {}

  /**
   * One search round in one call (refind.search.round, which runs the same steps through the other calls
   * for engines without this one): the BM25 query over {@code user}'s messages, the read-set, the session
   * ranking, the fusion, the windows around the chosen hits, the analyzed terms and, when asked, the
   * titles' ranking. {@code spec} (JSON): text, fetch, top_k, window, filters (time_from, time_to,
   * session_ids, roles), exclude_ids, exclude_sessions, read (drop read hits after an unfiltered query, and
   * query again with the exclusions when fewer than top_k remain), sessions ("hits" or "documents"),
   * restrict, k0, w_hit, w_session, titles, content_terms (optional: the hits are chosen among the messages
   * holding one of them, the session ranking still from every match). The result (JSON): hits (the unread hits,
   * {@code round_hit} records), orders (the round's session orders), selected (the chosen hits, {@code
   * selected} records), spans (a {@code span} record each, with its turns), terms and titled (the sessions
   * with hits by their titles' BM25). {@link Wire} lists each record's fields.
   */
  byte[] round(String user, String spec) throws IOException {
    JsonNode r = Wire.MAPPER.readTree(spec);
    String text = r.get("text").asText();
    int fetch = r.get("fetch").asInt();
    int topK = r.get("top_k").asInt();
    int window = r.get("window").asInt();
    JsonNode open = r.get("filters");
    List<String> exIds = Wire.strings(r.get("exclude_ids"));
    List<String> exSessions = Wire.strings(r.get("exclude_sessions"));
    boolean readSet = r.get("read").asBoolean();
    double k0 = r.get("k0").asDouble();
    double wHit = r.get("w_hit").asDouble();
    double wSession = r.get("w_session").asDouble();
    Query bag = analysis.bagQuery("contents", text);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    IndexSearcher searcher = manager.acquire();
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartObject();
      List<Hit> ranked = List.of();
      List<Hit> unread = List.of();
      if (bag != null && fetch > 0) {
        ObjectNode full = open != null && open.isObject() ? ((ObjectNode) open).deepCopy() : Wire.MAPPER.createObjectNode();
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
        Wire.roundHit(g, h);
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
        List<Sessions.Ranked> byDoc =
            r.get("restrict").asBoolean()
                ? Sessions.rankSessions(searcher, user, analysis.bagQuery("s_contents", text), withHits.size(), withHits, "s_contents")
                : Sessions.rankSessions(searcher, user, analysis.bagQuery("s_contents", text), Math.max(withHits.size(), 50), null, "s_contents");
        r2 = new ArrayList<>();
        for (Sessions.Ranked e : byDoc) {
          r2.add(e.session());
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
      List<Scored> fused = fuse(unread, k0, wHit, wSession, r2);
      List<Scored> selected = fused.subList(0, Math.min(topK, fused.size()));
      g.writeArrayFieldStart("selected");
      for (Scored e : selected) {
        Wire.selected(g, e);
      }
      g.writeEndArray();
      List<Span> spans = spans(selected, window);
      List<List<Hit>> turns = Sessions.windowHits(searcher, user, spans);
      g.writeArrayFieldStart("spans");
      for (int i = 0; i < spans.size(); i++) {
        Wire.span(g, spans.get(i), turns.get(i));
      }
      g.writeEndArray();
      g.writeArrayFieldStart("terms");
      for (String t : new java.util.LinkedHashSet<>(analysis.terms(text))) {
        g.writeString(t);
      }
      g.writeEndArray();
      g.writeArrayFieldStart("titled");
      if (r.get("titles").asBoolean() && !unread.isEmpty()) {
        List<String> unreadSessions = sessionsOf(unread);
        for (Sessions.Ranked e :
            Sessions.rankSessions(searcher, user, analysis.bagQuery("i_title", text), unreadSessions.size(), unreadSessions, "i_title")) {
          g.writeString(e.session());
        }
      }
      g.writeEndArray();
      g.writeEndObject();
    } finally {
      manager.release(searcher);
    }
    return out.toByteArray();
  }

  /** {@link Queries#topDocs} as hits with doc-value fields only. */
  private static List<Hit> top(IndexSearcher searcher, String user, Query bag, int k, JsonNode f) throws IOException {
    return Hits.read(searcher, Queries.topDocs(searcher, user, bag, k, f), false);
  }

  private static List<String> sessionsOf(List<Hit> hits) {
    return new ArrayList<>(new java.util.LinkedHashSet<>(hits.stream().map(h -> h.session).toList()));
  }

  private static List<String> sessionsOfFused(List<Scored> fused) {
    java.util.LinkedHashSet<String> out = new java.util.LinkedHashSet<>();
    for (Scored e : fused) {
      out.add(e.hit().session);
    }
    return new ArrayList<>(out);
  }

  /**
   * round.fuse: hits with their fused score, best first, ties in BM25 order. A hit's score is taken as the client
   * reads it from JSON (the float's shortest decimal, as a double), so session sums equal the client's.
   */
  private static List<Scored> fuse(
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
    List<Scored> scored = new ArrayList<>(hits.size());
    for (int i = 0; i < hits.size(); i++) {
      Hit h = hits.get(i);
      double f = wHit / (k0 + (i + 1)) + wSession / (k0 + rank.getOrDefault(h.session, missing));
      scored.add(new Scored(h, f));
    }
    scored.sort(Comparator.comparingDouble(e -> -e.score())); // stable
    return scored;
  }

  /** round._spans: the merged spans around the chosen hits, each with its best fused score. */
  private static List<Span> spans(List<Scored> selected, int window) {
    Map<String, List<double[]>> bySession = new LinkedHashMap<>();
    for (Scored e : selected) {
      Hit h = e.hit();
      bySession
          .computeIfAbsent(h.session, k -> new ArrayList<>())
          .add(new double[] {Math.max(h.turn - window, 0), (double) h.turn + window, e.score()});
    }
    List<Span> out = new ArrayList<>();
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
          out.add(new Span(e.getKey(), (long) lo, (long) hi, best));
          lo = x[0];
          hi = x[1];
          best = x[2];
        }
      }
      out.add(new Span(e.getKey(), (long) lo, (long) hi, best));
    }
    return out;
  }
}

package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.refind.lucene.Hits.Hit;
import java.io.IOException;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;

/**
 * The writes: a batch (messages, session documents, session info, a request marker) under the write lock,
 * each message analyzed once; commits (the vector index first); deletions of a session or a person; and
 * retention. The caller ({@link Engine}) checks the engine is writable.
 */
final class Writes extends Writing {
  private final FieldType textType;
  private final Vectors vectors; // null: read-only over an index from before vectors (none yet)
  private final Reads reads;

  Writes(
      SearcherManager manager, IndexWriter writer, Object writeLock, Analysis analysis, Documents.MessageDoc doc,
      FieldType textType, Vectors vectors, Reads reads) {
    super(manager, writer, writeLock, analysis, doc);
    this.textType = textType;
    this.vectors = vectors;
    this.reads = reads;
  }

  /**
   * Writes one batch without committing. JSON: {"added": ms, "records": [message, ...], "sessions": [session,
   * ...], "infos": [info, ...], "marker": marker or null} ({@link Wire} lists each record's fields). A message
   * with replace true replaces the message with its id. A session's text (null: remove its documents) is
   * indexed whole, or, when {@code appended} is n >= 0, as the analysis of its first n characters followed
   * by this batch's messages of that session (the text being those characters and their contents joined):
   * every message is analyzed once. {@link #commit} makes everything written so far durable and visible.
   */
  void write(JsonNode b) throws IOException {
    long added = b.get("added").asLong();
    JsonNode records = b.get("records");
    Wire.Message[] messages = new Wire.Message[records.size()];
    String[][] analyzed = new String[records.size()][];
    Map<String, List<String[]>> bySession = new HashMap<>();
    for (int i = 0; i < records.size(); i++) { // analysis needs no lock
      Wire.Message r = messages[i] = Wire.message(records.get(i));
      analyzed[i] = analysis.termArray(r.content());
      bySession.computeIfAbsent(r.user() + Documents.SEP + r.session(), k -> new ArrayList<>()).add(analyzed[i]);
    }
    synchronized (writeLock) {
      for (int i = 0; i < messages.length; i++) {
        Wire.Message r = messages[i];
        doc.fill(r, analyzed[i], added);
        if (r.replace()) {
          writer.updateDocument(new Term("key", Documents.messageKey(r.user(), r.id())), doc.doc);
        } else {
          writer.addDocument(doc.doc);
        }
        if (vectors != null) {
          vectors.onMessage(
              r.user(), r.id(), r.session(), r.turn(), r.ts(), r.role(), r.content(), r.replace());
        }
      }
      for (JsonNode node : b.path("sessions")) {
        Wire.Session s = Wire.session(node);
        if (s.text() == null) {
          deleteSession(s.user(), s.session());
          continue;
        }
        String text = s.text();
        List<String[]> parts = null;
        if (s.appended() >= 0) {
          parts = new ArrayList<>();
          parts.add(analysis.termArray(text.substring(0, Math.min(s.appended(), text.length()))));
          parts.addAll(bySession.getOrDefault(s.user() + Documents.SEP + s.session(), List.of()));
        }
        writeSession(s.user(), s.session(), text, parts, !s.isNew());
      }
      for (JsonNode node : b.path("infos")) {
        writeInfo(Wire.info(node));
      }
      JsonNode m = b.get("marker");
      if (m != null && !m.isNull()) {
        Wire.Marker marker = Wire.marker(m);
        writeMarker(marker.user(), marker.requestId(), marker.payload(), added);
      }
    }
  }

  /** Writes a session's two documents ({@link Documents#sessionDocs}), replacing them when {@code update}. */
  void writeSession(String user, String sid, String text, List<String[]> analyzed, boolean update)
      throws IOException {
    if (analyzed == null) {
      analyzed = List.<String[]>of(analysis.termArray(text));
    }
    Document[] docs = Documents.sessionDocs(user, sid, text, analyzed, textType);
    if (update) {
      writer.updateDocument(new Term("key", Documents.sessionKey("session", user, sid)), docs[0]);
      writer.updateDocument(new Term("key", Documents.sessionKey("session-text", user, sid)), docs[1]);
    } else {
      writer.addDocument(docs[0]);
      writer.addDocument(docs[1]);
    }
  }

  private void deleteSession(String user, String sid) throws IOException {
    writer.deleteDocuments(
        new Term("key", Documents.sessionKey("session", user, sid)),
        new Term("key", Documents.sessionKey("session-text", user, sid)),
        new Term("key", Documents.sessionKey("session-info", user, sid)));
  }

  /** A session's info document ({@link Documents#infoDoc}), replacing the one stored. */
  private void writeInfo(Wire.Info info) throws IOException {
    String[] title = info.title() == null ? null : analysis.termArray(info.title());
    writer.updateDocument(
        new Term("key", Documents.sessionKey("session-info", info.user(), info.session())),
        Documents.infoDoc(info, title));
  }

  /** A request marker ({@link Documents#markerDoc}), replacing the one stored. */
  void writeMarker(String user, String requestId, String payload, long added) throws IOException {
    writer.updateDocument(
        new Term("key", Documents.markerKey(user, requestId)), Documents.markerDoc(user, requestId, payload, added));
  }

  /**
   * Makes every write so far durable (fsync) and visible to the next search: the vector index first (a
   * message's queue entry is durable before the message), then the messages.
   */
  void commit() throws IOException {
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

  /**
   * Deletes one session of {@code user}: its messages, session documents and info, durably (with every
   * write before it). Returns the messages removed.
   */
  long deleteSessionOf(String user, String sid) throws IOException {
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

  /** Deletes every message, session document and request marker of {@code user}, durably. */
  long deleteUser(String user) throws IOException {
    long before = reads.count(user);
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
   * Returns JSON {"removed": n, "sessions": [expired_session, ...]} (each session that lost a message, with
   * its remaining turns' contents in turn order), so the caller can rewrite their session documents before
   * committing.
   */
  String expire(long cutoff) throws IOException {
    BooleanQuery.Builder old = new BooleanQuery.Builder();
    old.add(LongPoint.newRangeQuery("added", Long.MIN_VALUE, cutoff - 1), Occur.SHOULD);
    Query expired = old.build();
    Query messages = Queries.kindAnd("m", expired);
    Query markers = Queries.kindAnd("r", expired);
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
            affected.putIfAbsent(user + Documents.SEP + sid, new String[] {user, sid});
            keys.add(Documents.messageKey(user, ids.advanceExact(d) ? ids.binaryValue().utf8ToString() : ""));
          }
        }
        if (vectors != null) {
          vectors.deleteKeys(keys);
        }
        try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
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
                left == 0 ? new ArrayList<>() : Hits.read(searcher, searcher.search(keep.build(), left).scoreDocs, true);
            remaining.sort(Comparator.comparingInt(h -> h.turn));
            List<String> contents = new ArrayList<>(remaining.size());
            for (Hit h : remaining) {
              contents.add(Wire.MAPPER.readTree(h.raw).get("content").asText());
            }
            Wire.expiredSession(g, us[0], us[1], contents);
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
}

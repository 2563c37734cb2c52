package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.util.List;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.BinaryDocValuesField;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.util.BytesRef;

/**
 * The documents of the index (format 4; {@link Engine} describes the layout) and the "key" terms that name
 * them for replacement and deletion. Public, with {@link MessageDoc}, {@link #sessionDocs} and {@link
 * #textType}, for the import benchmark's Lucene-alone writer (benchmarks/java), which writes the very
 * documents refind writes.
 */
public final class Documents {
  private Documents() {}

  static final String SEP = "\u001f";

  /**
   * When the stored document {@code global} of {@code searcher} was added (its "added" doc value), or {@code
   * missing} when it has none (format 1).
   */
  static long added(IndexSearcher searcher, int global, long missing) throws IOException {
    List<LeafReaderContext> leaves = searcher.getIndexReader().leaves();
    LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(global, leaves));
    NumericDocValues added = leaf.reader().getNumericDocValues("added");
    return added != null && added.advanceExact(global - leaf.docBase) ? added.longValue() : missing;
  }

  /** The "key" of {@code user}'s message {@code id} (ids are unique per user). */
  static String messageKey(String user, String id) {
    return user + SEP + id;
  }

  /**
   * The "key" term of {@code user}'s session {@code sid}'s document of {@code kind} ("session",
   * "session-text", "session-info"): the term every write and delete of that document names.
   */
  static String sessionKey(String kind, String user, String sid) {
    return SEP + kind + SEP + user + SEP + sid;
  }

  /** The "key" of {@code user}'s request marker {@code requestId}. */
  static String markerKey(String user, String requestId) {
    return SEP + "request" + SEP + user + SEP + requestId;
  }

  /**
   * An analyzed, unstored field: with term frequencies (BM25 needs them, and the length norms, which do not
   * depend on the index options), with positions only for an index that already has them: no refind query
   * reads positions, and writing them cost import time and index size (docs/benchmarks/perf.md).
   */
  public static FieldType textType(boolean positions) {
    FieldType t = new FieldType(TextField.TYPE_NOT_STORED);
    if (!positions) {
      t.setIndexOptions(org.apache.lucene.index.IndexOptions.DOCS_AND_FREQS);
    }
    t.freeze();
    return t;
  }

  /**
   * The message {@code user}'s stored "raw" holds (every field of a message, as {@link MessageDoc#fill}
   * stored it), to be written again (replacing the stored one) with {@code standing}.
   */
  static Wire.Message storedMessage(
      String user, com.fasterxml.jackson.databind.JsonNode raw, com.fasterxml.jackson.databind.JsonNode standing) {
    return new Wire.Message(
        user, raw.get("session_id").asText(), raw.get("id").asText(), raw.get("turn").asInt(),
        raw.get("ts").asLong(), raw.get("role").asText(), raw.get("content").asText(),
        raw.hasNonNull("speaker") ? raw.get("speaker").asText() : null,
        raw.hasNonNull("time_text") ? raw.get("time_text").asText() : null, true, standing);
  }

  /** One reusable message document with mutable fields: creating Java objects per message is slow. */
  public static final class MessageDoc {
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

    public MessageDoc(FieldType textType) {
      contents = new Field("contents", terms, textType);
      for (Field f :
          new Field[] {
            key, kind, id, idDv, user, userDv, session, sessionDv, turnPt, turnDv, tsPt, tsDv, addedPt,
            addedDv, role, roleDv, contents, raw
          }) {
        doc.add(f);
      }
    }

    /** The document, as the last {@link #fill} set it. */
    public Document doc() {
      return doc;
    }

    /**
     * Sets every field for message {@code r} whose content was analyzed into {@code analyzed}, added at
     * {@code added}: its standing (when it has a kind) is stored in "raw" and its kind indexed as "standing".
     */
    public void fill(Wire.Message r, String[] analyzed, long added) throws IOException {
      String u = r.user();
      String s = r.session();
      String i = r.id();
      int t = r.turn();
      long ts = r.ts();
      String ro = r.role();
      String content = r.content();
      key.setStringValue(messageKey(u, i));
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
      com.fasterxml.jackson.databind.JsonNode st = r.standing();
      boolean stands = st != null && st.isObject() && st.hasNonNull("kind");
      doc.removeFields("standing");
      if (stands) {
        standing.setStringValue(st.get("kind").asText());
        doc.add(standing);
      }
      StringWriter w = new StringWriter(content.length() + 96);
      try (JsonGenerator g = Wire.JSON.createGenerator(w)) {
        g.writeStartObject();
        g.writeStringField("id", i);
        g.writeStringField("session_id", s);
        g.writeNumberField("turn", t);
        g.writeNumberField("ts", ts);
        g.writeStringField("role", ro);
        g.writeStringField("content", content);
        if (r.speaker() != null && !r.speaker().isEmpty()) {
          g.writeStringField("speaker", r.speaker());
        }
        if (r.timeText() != null) {
          g.writeStringField("time_text", r.timeText());
        }
        if (stands) {
          g.writeFieldName("standing");
          Wire.MAPPER.writeTree(g, st);
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

  /**
   * A session's two documents: its analyzed text for session-level BM25 (kind "s", from its messages' terms
   * {@code analyzed}, in order) and its stored text (kind "t").
   */
  public static Document[] sessionDocs(
      String user, String sid, String text, List<String[]> analyzed, FieldType textType) {
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
   * A session's info document (kind "i"): its title (analyzed into {@code titleTerms}, for title search;
   * null: none), source and project, all three stored as JSON ({@link Wire#sessionInfo}).
   */
  static Document infoDoc(Wire.Info info, String[] titleTerms) throws IOException {
    Document d = new Document();
    d.add(new StringField("key", sessionKey("session-info", info.user(), info.session()), Field.Store.NO));
    d.add(new StringField("kind", "i", Field.Store.NO));
    d.add(new StringField("s_user", info.user(), Field.Store.NO));
    d.add(new StringField("i_session", info.session(), Field.Store.NO));
    d.add(new SortedDocValuesField("i_session_dv", new BytesRef(info.session())));
    if (titleTerms != null) {
      TermsStream stream = new TermsStream();
      stream.set(titleTerms);
      d.add(new Field("i_title", stream, TextField.TYPE_NOT_STORED));
    }
    d.add(new StoredField(
        "i_raw", Wire.sessionInfo(info.session(), info.title(), info.source(), info.project())));
    return d;
  }

  /** A request marker's document (kind "r"): its payload stored, its add time. */
  static Document markerDoc(String user, String requestId, String payload, long added) {
    Document d = new Document();
    d.add(new StringField("key", markerKey(user, requestId), Field.Store.NO));
    d.add(new StringField("kind", "r", Field.Store.NO));
    d.add(new StringField("req_user", user, Field.Store.NO));
    d.add(new LongPoint("added", added));
    d.add(new NumericDocValuesField("added", added));
    d.add(new StoredField("raw", payload));
    return d;
  }
}

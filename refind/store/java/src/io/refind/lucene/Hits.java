package io.refind.lucene;

import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;

/**
 * Hits: the fields a hit shows, read from doc values (a ranking pass never decompresses a stored message),
 * and the stored message ("raw") when read with content, through a cache of those recently read.
 */
final class Hits {
  private Hits() {}

  /** A message found: its doc-value fields, its score, and its stored message when read with content. */
  static final class Hit {
    String id;
    String session;
    int turn;
    long ts;
    String role;
    float score;
    String raw; // the stored message, when read with content
  }

  /** {@code docs} as a JSON list of hits ({@link Wire#hit}); unscored ones with score 0. */
  static byte[] json(IndexSearcher searcher, ScoreDoc[] docs, boolean scored, boolean content)
      throws IOException {
    List<Hit> hits = read(searcher, docs, content);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = Wire.JSON.createGenerator(out)) {
      g.writeStartArray();
      for (Hit h : hits) {
        if (!scored) {
          h.score = 0f;
        }
        Wire.hit(g, h);
      }
      g.writeEndArray();
    }
    return out.toByteArray();
  }

  /** The hit fields of {@code docs} (in their order) from doc values, and the stored message with content. */
  static List<Hit> read(IndexSearcher searcher, ScoreDoc[] docs, boolean content) throws IOException {
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
  static String[] sortedValues(IndexSearcher searcher, ScoreDoc[] docs, String field)
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
}

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
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.ReaderUtil;
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

  /**
   * The doc-value fields of messages visited in index order ({@link DocValuesWalk}): those a hit shows and
   * the message's user, each opened in a segment only when read there.
   */
  static final class Fields {
    private final DocValuesWalk walk;
    final DocValuesWalk.Column user;
    final DocValuesWalk.Column id;
    final DocValuesWalk.Column session;
    final DocValuesWalk.Column role;
    final DocValuesWalk.Column turn;
    final DocValuesWalk.Column ts;

    Fields(IndexSearcher searcher) {
      walk = new DocValuesWalk(searcher);
      user = walk.sorted("user_dv");
      id = walk.binary("id");
      session = walk.sorted("session_id");
      role = walk.sorted("role_dv");
      turn = walk.numeric("turn");
      ts = walk.numeric("ts");
    }

    /** Moves to message {@code global}, at or after the current one. */
    void to(int global) {
      walk.to(global);
    }
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
    Fields m = new Fields(searcher);
    for (int i : order) {
      m.to(docs[i].doc);
      Hit h = new Hit();
      h.id = m.id.text();
      h.session = m.session.text();
      h.role = m.role.text();
      h.turn = (int) m.turn.number();
      h.ts = m.ts.number();
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
    String[] out = new String[docs.length];
    Integer[] order = new Integer[docs.length];
    for (int i = 0; i < docs.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.comparingInt(i -> docs[i].doc)); // doc values are read forwards
    DocValuesWalk walk = new DocValuesWalk(searcher);
    DocValuesWalk.Column values = walk.sorted(field);
    for (int i : order) {
      walk.to(docs[i].doc);
      out[i] = values.text();
    }
    return out;
  }
}

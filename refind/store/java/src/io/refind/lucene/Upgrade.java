package io.refind.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.List;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.MultiTerms;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.util.BytesRef;

/**
 * The upgrade of an index of an older format (1 or 2) in place: every document rewritten in this format from
 * what it stored. Python decides when ({@code refind.store.lucene}: on a writable open of such an index).
 */
final class Upgrade {
  private final SearcherManager manager;
  private final IndexWriter writer;
  private final Object writeLock;
  private final Analysis analysis;
  private final Documents.MessageDoc doc;
  private final Writes writes;

  Upgrade(
      SearcherManager manager, IndexWriter writer, Object writeLock, Analysis analysis, Documents.MessageDoc doc,
      Writes writes) {
    this.manager = manager;
    this.writer = writer;
    this.writeLock = writeLock;
    this.analysis = analysis;
    this.doc = doc;
    this.writes = writes;
  }

  /**
   * Rewrites every message, session text and request marker of an older format in this one, from what it
   * stored (messages: "raw"; markers: their key and payload); those without an "added" time (format 1)
   * get {@code legacyAdded}. Not committed. Returns how many documents were rewritten.
   */
  long upgrade(long legacyAdded) throws IOException {
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
            JsonNode raw = Wire.MAPPER.readTree(old.get("raw"));
            LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(sd.doc, leaves));
            NumericDocValues added = leaf.reader().getNumericDocValues("added");
            int d = sd.doc - leaf.docBase;
            long when = added != null && added.advanceExact(d) ? added.longValue() : legacyAdded;
            Wire.Message m =
                Documents.storedMessage(
                    old.get("user_id"), raw, raw.hasNonNull("standing") ? raw.get("standing") : null);
            doc.fill(m, analysis.termArray(m.content()), when);
            writer.updateDocument(new Term("key", old.get("user_id") + Documents.SEP + raw.get("id").asText()), doc.doc);
            n++;
          }
        }
        Terms keys = MultiTerms.getTerms(searcher.getIndexReader(), "key");
        if (keys != null) {
          // session texts: rewritten with their session id stored and the session document beside them
          String textPrefix = Documents.SEP + "session-text" + Documents.SEP;
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
              String[] parts = key.substring(textPrefix.length()).split(Documents.SEP, 2);
              writes.writeSession(parts[0], parts[1], stored.document(top.scoreDocs[0].doc).get("s_text"), null, true);
              n++;
            }
          }
          String prefix = Documents.SEP + "request" + Documents.SEP;
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
              String[] parts = key.substring(prefix.length()).split(Documents.SEP, 2);
              int doc = top.scoreDocs[0].doc;
              String payload = stored.document(doc).get("raw");
              LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(doc, leaves));
              NumericDocValues added = leaf.reader().getNumericDocValues("added");
              long when =
                  added != null && added.advanceExact(doc - leaf.docBase) ? added.longValue() : legacyAdded;
              writes.writeMarker(parts[0], parts[1], payload, when);
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
}

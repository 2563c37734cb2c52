package io.refind.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.MultiTerms;
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
final class Upgrade extends Writing {
  private final Writes writes;

  Upgrade(
      SearcherManager manager, IndexWriter writer, Object writeLock, Analysis analysis, Documents.MessageDoc doc,
      Writes writes) {
    super(manager, writer, writeLock, analysis, doc);
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
        int messages = searcher.count(new TermQuery(new Term("kind", "m")));
        if (messages > 0) {
          TopDocs all = searcher.search(new TermQuery(new Term("kind", "m")), messages);
          for (ScoreDoc sd : all.scoreDocs) {
            Document old = stored.document(sd.doc);
            JsonNode raw = Wire.MAPPER.readTree(old.get("raw"));
            long when = Documents.added(searcher, sd.doc, legacyAdded);
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
          for (Keyed t : keyed(searcher, keys, Documents.SEP + "session-text" + Documents.SEP)) {
            writes.writeSession(t.user(), t.id(), stored.document(t.doc()).get("s_text"), null, true);
            n++;
          }
          for (Keyed r : keyed(searcher, keys, Documents.SEP + "request" + Documents.SEP)) {
            String payload = stored.document(r.doc()).get("raw");
            writes.writeMarker(r.user(), r.id(), payload, Documents.added(searcher, r.doc(), legacyAdded));
            n++;
          }
        }
      } finally {
        manager.release(searcher);
      }
    }
    return n;
  }

  /** A document named by a "key" of one kind: the user and the id (a session's, a request's) the key holds. */
  private record Keyed(String user, String id, int doc) {}

  /**
   * The documents whose "key" ({@code keys}) starts with {@code prefix} (a kind between separators), in key
   * order: each key's first match, with the rest of the key split into user and id.
   */
  private static List<Keyed> keyed(IndexSearcher searcher, Terms keys, String prefix) throws IOException {
    List<Keyed> out = new ArrayList<>();
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
        out.add(new Keyed(parts[0], parts[1], top.scoreDocs[0].doc));
      }
    }
    return out;
  }
}

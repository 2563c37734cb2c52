package io.refind.lucene;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.SearcherManager;
import org.apache.lucene.search.Sort;
import org.apache.lucene.search.SortField;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;

/**
 * What a person's messages say that stands (issue 37): the read of a person's standing messages in one
 * query, and the rewrite of stored messages whose standing changed (an index written before the rule, or by
 * another version of it).
 */
final class Standing extends Writing {
  Standing(
      SearcherManager manager, IndexWriter writer, Object writeLock, Analysis analysis, Documents.MessageDoc doc) {
    super(manager, writer, writeLock, analysis, doc);
  }

  /**
   * The messages of {@code user} that state something standing (their "standing" kind indexed at write
   * time: issue 37), newest first, at most {@code k}, with content (the stored message holds its standing
   * sentence, domain, subject and change flag). One query: no scan of the person's messages.
   */
  byte[] standing(String user, int k) throws IOException {
    if (k <= 0) {
      return Wire.emptyList();
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    b.add(new TermQuery(new Term("user_id", user)), Occur.FILTER);
    b.add(new TermQuery(new Term("kind", "m")), Occur.FILTER);
    b.add(Queries.termSet("standing", List.of("instruction", "preference", "fact")), Occur.FILTER);
    IndexSearcher searcher = manager.acquire();
    try {
      Sort sort =
          new Sort(
              new SortField("ts", SortField.Type.LONG, true),
              new SortField("session_id", SortField.Type.STRING, false),
              new SortField("turn", SortField.Type.LONG, true));
      TopDocs top = searcher.search(b.build(), k, sort);
      return Hits.json(searcher, top.scoreDocs, false, true);
    } finally {
      manager.release(searcher);
    }
  }

  /**
   * Sets what stored messages say that stands (the upgrade of an index written before issue 37, or by
   * another version of the rule): {@code records} is a JSON list of {@code standing_change} records. Each
   * message is rewritten from what it stored ("raw"), keeping its add time; its vector (kept apart, by key)
   * is untouched. Not committed. Returns how many messages were rewritten (missing ids are skipped).
   */
  long setStanding(byte[] records) throws IOException {
    JsonNode list = Wire.MAPPER.readTree(records);
    long n = 0;
    synchronized (writeLock) {
      IndexSearcher searcher = manager.acquire();
      try {
        StoredFields stored = searcher.storedFields();
        for (JsonNode node : list) {
          Wire.StandingChange e = Wire.standingChange(node);
          String key = Documents.messageKey(e.user(), e.id());
          TopDocs top = searcher.search(Queries.kindAnd("m", new TermQuery(new Term("key", key))), 1);
          if (top.scoreDocs.length == 0) {
            continue;
          }
          int docId = top.scoreDocs[0].doc;
          JsonNode raw = Wire.MAPPER.readTree(stored.document(docId).get("raw"));
          long when = Documents.added(searcher, docId, 0L);
          Wire.Message m = Documents.storedMessage(e.user(), raw, e.standing());
          doc.fill(m, analysis.termArray(m.content()), when);
          writer.updateDocument(new Term("key", key), doc.doc);
          n++;
        }
      } finally {
        manager.release(searcher);
      }
    }
    return n;
  }
}

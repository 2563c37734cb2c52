package io.refind.bench;

import io.refind.lucene.Analysis;
import io.refind.lucene.Documents;
import io.refind.lucene.Wire;
import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LogByteSizeMergePolicy;
import org.apache.lucene.index.SerialMergeScheduler;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

/**
 * The engine's own rate, for the import benchmark ({@code python -m benchmarks perf --longmemeval}): messages
 * written by Lucene's IndexWriter in one Java loop, with nothing of refind's import around it (no Python, no
 * JSON, no lookups, one commit at the end), with the engine's analyzer, index options and writer settings.
 * Two shapes: {@code "text"}, each message as one analyzed field and its stored text (what a bare Lucene
 * index of the messages costs); {@code "refind"}, the documents refind writes (every field of a message
 * document, and each session's two documents, its text analyzed once with its messages).
 *
 * <p>A benchmark's helper, not part of refind: it lives in benchmarks/java and is compiled on demand against
 * refind's jar into a jar of its own ({@code benchmarks.javac.bench_jar}), which the benchmark adds to the
 * running JVM's class path. It uses only the public parts of the engine ({@link Analysis}, {@link
 * Documents}, {@link Wire.Message}), so it writes exactly what the engine writes.
 */
public final class Ceiling {
  private Ceiling() {}

  /**
   * Writes the messages ({@code users[i]}, {@code sessions[i]}, {@code roles[i]}, {@code contents[i]}, a
   * session's messages consecutive) into a new index at {@code path} in {@code shape} and commits. Returns
   * the nanoseconds spent writing and committing: {@code [write, commit]}.
   */
  public static long[] run(
      String path, String[] users, String[] sessions, String[] roles, String[] contents, String shape,
      double ramBufferMb)
      throws IOException {
    if (!shape.equals("text") && !shape.equals("refind")) {
      throw new IllegalArgumentException("shape: expected text or refind, got " + shape);
    }
    List<Wire.Message> records = new ArrayList<>(contents.length); // built before the clock starts
    for (int i = 0; i < contents.length; i++) {
      records.add(new Wire.Message(
          users[i], sessions[i], Integer.toString(i), i, 1_700_000_000_000L + i, roles[i], contents[i], null, null,
          false, null));
    }
    Analyzer analyzer = Analysis.buildAnalyzer();
    org.apache.lucene.document.FieldType textType = Documents.textType(false);
    IndexWriterConfig config = new IndexWriterConfig(analyzer);
    config.setOpenMode(IndexWriterConfig.OpenMode.CREATE);
    config.setSimilarity(new BM25Similarity());
    config.setRAMBufferSizeMB(ramBufferMb);
    config.setMergePolicy(new LogByteSizeMergePolicy());
    config.setMergeScheduler(new SerialMergeScheduler());
    try (Directory directory = FSDirectory.open(Paths.get(path));
        IndexWriter writer = new IndexWriter(directory, config)) {
      long t0 = System.nanoTime();
      if (shape.equals("text")) {
        Field text = new Field("contents", "", textType);
        StoredField raw = new StoredField("raw", "");
        Document doc = new Document();
        doc.add(text);
        doc.add(raw);
        for (String content : contents) {
          text.setStringValue(content.replace(':', ' '));
          raw.setStringValue(content);
          writer.addDocument(doc);
        }
      } else {
        Documents.MessageDoc doc = new Documents.MessageDoc(textType);
        List<String[]> parts = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < records.size(); i++) {
          String[] analyzed = Analysis.terms(analyzer, contents[i]).toArray(new String[0]);
          doc.fill(records.get(i), analyzed, 1_700_000_000_000L);
          writer.addDocument(doc.doc());
          parts.add(analyzed);
          text.append(text.length() == 0 ? "" : "\n").append(contents[i]);
          boolean last =
              i + 1 == records.size() || !users[i + 1].equals(users[i]) || !sessions[i + 1].equals(sessions[i]);
          if (last) {
            for (Document d : Documents.sessionDocs(users[i], sessions[i], text.toString(), parts, textType)) {
              writer.addDocument(d);
            }
            parts = new ArrayList<>();
            text.setLength(0);
          }
        }
      }
      long t1 = System.nanoTime();
      writer.commit();
      return new long[] {t1 - t0, System.nanoTime() - t1};
    }
  }
}

package io.refind.lucene;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause.Occur;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;

/**
 * Text to index terms: the analyzer chain (its name is recorded in refind.json), and a text as the bag of
 * words every query is (never query syntax). Public, with {@link #buildAnalyzer} and {@link #terms(Analyzer,
 * String)}, for the import benchmark's Lucene-alone writer (benchmarks/java), which analyzes as refind does.
 */
public final class Analysis {
  static final int MAX_TERMS = 64;

  private final Analyzer analyzer;

  Analysis(Analyzer analyzer) {
    this.analyzer = analyzer;
  }

  Analyzer analyzer() {
    return analyzer;
  }

  /**
   * The analyzer chain: the standard tokenizer, then cjkWidth, lowercase, cjkBigram, englishPossessive, stop
   * (Lucene's English set) and porterStem. Text reaches it through {@link #terms}, which first maps ':' to a
   * space: UAX#29 keeps "title:kayak" one word (':' is MidLetter), in chat text it is two.
   */
  public static Analyzer buildAnalyzer() {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String fieldName) {
        org.apache.lucene.analysis.standard.StandardTokenizer source =
            new org.apache.lucene.analysis.standard.StandardTokenizer();
        TokenStream ts = new org.apache.lucene.analysis.cjk.CJKWidthFilter(source);
        ts = new org.apache.lucene.analysis.LowerCaseFilter(ts);
        ts = new org.apache.lucene.analysis.cjk.CJKBigramFilter(ts);
        ts = new org.apache.lucene.analysis.en.EnglishPossessiveFilter(ts);
        ts = new org.apache.lucene.analysis.StopFilter(
            ts, org.apache.lucene.analysis.en.EnglishAnalyzer.ENGLISH_STOP_WORDS_SET);
        ts = new org.apache.lucene.analysis.en.PorterStemFilter(ts);
        return new TokenStreamComponents(source, ts);
      }

      @Override
      protected TokenStream normalize(String fieldName, TokenStream in) {
        return new org.apache.lucene.analysis.LowerCaseFilter(
            new org.apache.lucene.analysis.cjk.CJKWidthFilter(in));
      }
    };
  }

  /** The index terms of {@code text}, in order. */
  List<String> terms(String text) throws IOException {
    return terms(analyzer, text);
  }

  /** {@link #terms(String)} as an array, as a document's token stream takes them. */
  String[] termArray(String text) throws IOException {
    return terms(text).toArray(new String[0]);
  }

  /** The index terms of {@code text} by {@code analyzer} (the engine's: {@link #buildAnalyzer}), in order. */
  public static List<String> terms(Analyzer analyzer, String text) throws IOException {
    List<String> out = new ArrayList<>();
    if (text == null || text.isBlank()) {
      return out;
    }
    try (TokenStream ts = analyzer.tokenStream("contents", text.replace(':', ' '))) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) {
        out.add(term.toString());
      }
      ts.end();
    }
    return out;
  }

  /** The distinct terms of {@code text}, most frequent first (ties: first seen), at most MAX_TERMS. */
  List<Map.Entry<String, Integer>> bag(String text) throws IOException {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (String t : terms(text)) {
      counts.merge(t, 1, Integer::sum);
    }
    List<Map.Entry<String, Integer>> entries = new ArrayList<>(counts.entrySet());
    entries.sort(Comparator.comparingInt((Map.Entry<String, Integer> e) -> -e.getValue()));
    return entries.size() > MAX_TERMS ? entries.subList(0, MAX_TERMS) : entries;
  }

  /** The bag of {@code text} as SHOULD clauses over {@code field} (a repeated term boosted by its count). */
  Query bagQuery(String field, String text) throws IOException {
    List<Map.Entry<String, Integer>> bag = bag(text);
    if (bag.isEmpty()) {
      return null;
    }
    BooleanQuery.Builder b = new BooleanQuery.Builder();
    for (Map.Entry<String, Integer> e : bag) {
      Query tq = new TermQuery(new Term(field, e.getKey()));
      b.add(e.getValue() > 1 ? new BoostQuery(tq, e.getValue()) : tq, Occur.SHOULD);
    }
    return b.build();
  }
}

package io.refind.lucene;

import java.io.IOException;
import java.util.List;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DocValues;
import org.apache.lucene.index.DocValuesType;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.search.IndexSearcher;

/**
 * The doc values of documents visited in index order (global doc ids, increasing): each document's segment
 * found once, and each field read opened once per segment, so it is read forwards as Lucene's iterators
 * must be. A field is named once ({@link #sorted}, {@link #binary}, {@link #numeric}) and read at the
 * current document; a document without it reads "" (text) or 0 (a number).
 */
final class DocValuesWalk {
  private final List<LeafReaderContext> leaves;
  private int leafIndex = -1;
  private LeafReader reader;
  private int docBase;
  private int doc; // the current document, within its segment

  DocValuesWalk(IndexSearcher searcher) {
    this.leaves = searcher.getIndexReader().leaves();
  }

  /** Moves to document {@code global}, at or after the current one. */
  void to(int global) {
    int li = ReaderUtil.subIndex(global, leaves);
    if (li != leafIndex) {
      leafIndex = li;
      LeafReaderContext leaf = leaves.get(li);
      reader = leaf.reader();
      docBase = leaf.docBase;
    }
    doc = global - docBase;
  }

  /** A text field of sorted doc values. */
  Column sorted(String field) {
    return new Column(field, DocValuesType.SORTED);
  }

  /** A text field of binary doc values (UTF-8). */
  Column binary(String field) {
    return new Column(field, DocValuesType.BINARY);
  }

  /** A field of numeric doc values. */
  Column numeric(String field) {
    return new Column(field, DocValuesType.NUMERIC);
  }

  /** A field of the walk: its doc values in the current document's segment, opened when first read there. */
  final class Column {
    private final String field;
    private final DocValuesType type; // SORTED, BINARY or NUMERIC
    private int opened = -1; // the segment its values are of
    private SortedDocValues sorted;
    private BinaryDocValues binary;
    private NumericDocValues numeric;

    private Column(String field, DocValuesType type) {
      this.field = field;
      this.type = type;
    }

    private void open() throws IOException {
      opened = leafIndex;
      if (type == DocValuesType.SORTED) {
        sorted = DocValues.getSorted(reader, field);
      } else if (type == DocValuesType.BINARY) {
        binary = DocValues.getBinary(reader, field);
      } else {
        numeric = DocValues.getNumeric(reader, field);
      }
    }

    /** Its text at the current document ("" when it has none): a sorted or binary field. */
    String text() throws IOException {
      if (opened != leafIndex) {
        open();
      }
      if (type == DocValuesType.SORTED) {
        return sorted.advanceExact(doc) ? sorted.lookupOrd(sorted.ordValue()).utf8ToString() : "";
      }
      return binary.advanceExact(doc) ? binary.binaryValue().utf8ToString() : "";
    }

    /** Its number at the current document (0 when it has none): a numeric field. */
    long number() throws IOException {
      if (opened != leafIndex) {
        open();
      }
      return numeric.advanceExact(doc) ? numeric.longValue() : 0L;
    }
  }
}

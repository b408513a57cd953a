package dedup.hbase.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Map;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Spark data source {@code dedup-hbase-chunks}: each file's bytes as stored (no codec), in
 * order, as rows (ordinal, chunk) of at most {@code chunkBytes} bytes, one partition per file, so
 * that the one task that reads a file holds a chunk of it at a time, never the whole file (Spark's
 * {@code binaryFile} holds a file in one row). A file's rows are its chunks in order, at least one
 * (an empty file: one empty chunk). Options: {@code files} (URIs, newline-separated), {@code
 * ordinals} (comma-separated, one per file: its input ordinal) and {@code chunkBytes}. What
 * the bytes hold (CSV, TSV, a whole-file document, a compressed or damaged file) is the Python
 * reader's to judge, as in a local read. This source does not write.
 */
public final class FileChunks implements TableProvider, DataSourceRegister {
  static final StructType SCHEMA = new StructType()
      .add("ordinal", DataTypes.IntegerType).add("chunk", DataTypes.BinaryType);

  static final String NAME = "dedup-hbase-chunks";

  @Override
  public String shortName() {
    return NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    CaseInsensitiveStringMap o = new CaseInsensitiveStringMap(properties);
    String[] files = ReadOnlyTable.required(o, NAME, "files").split("\n", -1);
    int[] ordinals = Arrays.stream(ReadOnlyTable.required(o, NAME, "ordinals").split(","))
        .mapToInt(Integer::parseInt).toArray();
    int chunkBytes = Integer.parseInt(ReadOnlyTable.required(o, NAME, "chunkBytes"));
    if (ordinals.length != files.length || chunkBytes < 1) {
      throw new IllegalArgumentException(NAME + ": one ordinal per file, and chunkBytes of 1 or more");
    }
    return new ReadOnlyTable(NAME, SCHEMA) {
      @Override
      InputPartition[] partitions() {
        InputPartition[] each = new InputPartition[files.length];
        for (int f = 0; f < files.length; f++) {
          each[f] = new File(ordinals[f], files[f], chunkBytes);
        }
        return each;
      }

      @Override
      PartitionReaderFactory readers() {
        return partition -> new ChunkReader((File) partition);
      }
    };
  }

  /** One file and the size of its chunks. */
  static final class File implements InputPartition, Serializable {
    final int ordinal;
    final String path;
    final int chunkBytes;

    File(int ordinal, String path, int chunkBytes) {
      this.ordinal = ordinal;
      this.path = path;
      this.chunkBytes = chunkBytes;
    }
  }

  /** A file's chunks, each full but the last. */
  static final class ChunkReader implements PartitionReader<InternalRow> {
    final File file;
    InputStream in;
    boolean any;
    InternalRow current;

    ChunkReader(File file) {
      this.file = file;
    }

    @Override
    public boolean next() throws IOException {
      if (in == null) {
        Path path = new Path(file.path);
        in = path.getFileSystem(ExecutorHadoop.conf()).open(path);
      }
      byte[] chunk = FingerprintLines.HeadReader.first(in, file.chunkBytes);
      if (chunk.length == 0 && any) {
        return false;
      }
      any = true;
      current = new GenericInternalRow(new Object[] {file.ordinal, chunk});
      return true;
    }

    @Override
    public InternalRow get() {
      return current;
    }

    @Override
    public void close() throws IOException {
      if (in != null) {
        in.close();
      }
    }
  }
}

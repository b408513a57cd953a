package dedup.hbase.spark;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Spark data source {@code dedup-hbase-lines}: the rows of one string column written as
 * lines (UTF-8, each ending with a newline) under the names a job's outputs have, on any Hadoop
 * file system, so that no caller moves or renames files afterwards (Spark Connect's clients
 * cannot). Options, one of:
 * <ul>
 * <li>{@code file}: one file, written by the only task (a DataFrame of more than one non-empty
 * partition fails the write); no rows: an empty file. Replaced if there.
 * <li>{@code folder} (and {@code suffix}, such as ".jsonl"): a file per non-empty partition,
 * {@code part-NNNNN<suffix>}, and {@code _SUCCESS}; what the folder held before is removed.
 * <li>{@code remove}: a file or folder removed (with what it holds) by the driver, written to by a
 * DataFrame of no rows (a row fails the write): the way a job through Spark Connect removes what
 * it staged.
 * </ul>
 * Tasks write under a hidden folder ({@code _dedup-lines-<job>}, beside the file or inside the
 * folder), renamed into place by the driver when every task has committed; a failed write leaves
 * the old output as it was. This source does not read.
 */
public final class LinesSink implements TableProvider, DataSourceRegister {
  static final StructType SCHEMA = new StructType().add("value", DataTypes.StringType);

  @Override
  public String shortName() {
    return "dedup-hbase-lines";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    CaseInsensitiveStringMap o = new CaseInsensitiveStringMap(properties);
    String file = o.get("file");
    String folder = o.get("folder");
    String remove = o.get("remove");
    if ((file == null ? 0 : 1) + (folder == null ? 0 : 1) + (remove == null ? 0 : 1) != 1) {
      throw new IllegalArgumentException("dedup-hbase-lines: give one of the options file, folder and remove");
    }
    return new Sink(file, folder == null ? remove : folder, o.getOrDefault("suffix", ""), remove != null);
  }

  static final class Sink implements SupportsWrite {
    final String file;
    final String folder;
    final String suffix;
    final boolean remove;

    Sink(String file, String folder, String suffix, boolean remove) {
      this.file = file;
      this.folder = folder;
      this.suffix = suffix;
      this.remove = remove;
    }

    @Override
    public String name() {
      return "dedup-hbase-lines";
    }

    @Override
    public StructType schema() {
      return SCHEMA;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new WriteBuilder() {
        @Override
        public Write build() {
          return new Write() {
            @Override
            public BatchWrite toBatch() {
              return new Lines(file, folder, suffix, remove);
            }
          };
        }
      };
    }
  }

  /** A task's file: its partition and temporary path (null: the task had no rows). */
  static final class Written implements WriterCommitMessage {
    final int partition;
    final String path;

    Written(int partition, String path) {
      this.partition = partition;
      this.path = path;
    }
  }

  static final class Lines implements BatchWrite, Serializable {
    final String target; // the file or the folder, qualified on the driver
    final boolean single;
    final String suffix;
    final String tmp;
    final boolean remove;

    Lines(String file, String folder, String suffix, boolean remove) {
      this.single = file != null;
      this.suffix = suffix;
      this.remove = remove;
      try {
        Path given = new Path(single ? file : folder);
        Path qualified = given.getFileSystem(conf()).makeQualified(given);
        this.target = qualified.toString();
        String hidden = "_dedup-lines-" + UUID.randomUUID().toString().replace("-", "");
        this.tmp = new Path(single ? qualified.getParent() : qualified, hidden).toString();
      } catch (IOException e) {
        throw new IllegalStateException("cannot reach " + (single ? file : folder) + ": " + e, e);
      }
    }

    static Configuration conf() {
      return SparkContext.getOrCreate().hadoopConfiguration(); // the driver's, with spark.hadoop.*
    }

    /** {@code path}'s file system; a local one without its checksum files ({@code .NAME.crc}
     * beside every file: not part of a job's output). */
    static FileSystem fileSystem(Path path, Configuration conf) throws IOException {
      FileSystem fs = path.getFileSystem(conf);
      return fs instanceof LocalFileSystem ? ((LocalFileSystem) fs).getRawFileSystem() : fs;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      String dir = tmp;
      return (DataWriterFactory) (partitionId, taskId) -> new TaskWriter(dir, partitionId, taskId);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
      List<Written> files = new ArrayList<>();
      for (WriterCommitMessage m : messages) {
        if (m instanceof Written && ((Written) m).path != null) {
          files.add((Written) m);
        }
      }
      try {
        Path to = new Path(target);
        FileSystem fs = fileSystem(to, conf());
        if (remove) {
          for (Written w : files) {
            fs.delete(new Path(w.path), false);
          }
          if (!files.isEmpty()) {
            throw new IllegalStateException(target + ": rows written to a removal");
          }
          fs.delete(to, true);
        } else if (single) {
          if (files.size() > 1) {
            throw new IllegalStateException(target + ": " + files.size() + " tasks wrote lines where one was to");
          }
          if (fs.exists(to)) {
            fs.delete(to, false);
          }
          if (files.isEmpty()) {
            fs.create(to, true).close();
          } else {
            rename(fs, new Path(files.get(0).path), to);
          }
        } else {
          fs.mkdirs(to);
          for (FileStatus old : fs.listStatus(to)) {
            if (!old.getPath().toString().equals(new Path(tmp).toString())) {
              fs.delete(old.getPath(), true);
            }
          }
          for (Written w : files) {
            rename(fs, new Path(w.path), new Path(to, String.format("part-%05d%s", w.partition, suffix)));
          }
          fs.create(new Path(to, "_SUCCESS"), true).close();
        }
        fs.delete(new Path(tmp), true);
      } catch (IOException e) {
        throw new IllegalStateException("cannot write " + target + ": " + e, e);
      }
    }

    static void rename(FileSystem fs, Path from, Path to) throws IOException {
      if (!fs.rename(from, to)) {
        throw new IOException("cannot move " + from + " to " + to);
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      try {
        Path dir = new Path(tmp);
        fileSystem(dir, conf()).delete(dir, true);
      } catch (IOException ignored) {
        // the write fails anyway; a hidden folder is left
      }
    }
  }

  static final class TaskWriter implements DataWriter<InternalRow> {
    final Path path;
    final int partition;
    FileSystem fs;
    OutputStream out;

    TaskWriter(String dir, int partition, long taskId) {
      this.path = new Path(dir, String.format("part-%05d-t%d", partition, taskId));
      this.partition = partition;
    }

    @Override
    public void write(InternalRow row) throws IOException {
      if (out == null) {
        fs = Lines.fileSystem(path, ExecutorHadoop.conf());
        out = fs.create(path, true);
      }
      if (!row.isNullAt(0)) {
        out.write(row.getUTF8String(0).getBytes());
      }
      out.write('\n');
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      if (out == null) {
        return new Written(partition, null);
      }
      out.close();
      out = null;
      return new Written(partition, path.toString());
    }

    @Override
    public void abort() throws IOException {
      if (out != null) {
        out.close();
        out = null;
        fs.delete(path, false);
      }
    }

    @Override
    public void close() throws IOException {
      if (out != null) {
        out.close();
      }
    }
  }
}

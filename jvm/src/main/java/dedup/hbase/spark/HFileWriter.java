package dedup.hbase.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.io.compress.Compression;
import org.apache.hadoop.hbase.io.encoding.DataBlockEncoding;
import org.apache.hadoop.hbase.io.hfile.CacheConfig;
import org.apache.hadoop.hbase.io.hfile.HFile;
import org.apache.hadoop.hbase.io.hfile.HFileContext;
import org.apache.hadoop.hbase.io.hfile.HFileContextBuilder;
import org.apache.hadoop.hbase.regionserver.BloomType;
import org.apache.hadoop.hbase.regionserver.HStoreFile;
import org.apache.hadoop.hbase.regionserver.StoreFileWriter;
import org.apache.hadoop.hbase.regionserver.StoreUtils;
import org.apache.hadoop.hbase.util.BloomFilterUtil;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.spark.TaskContext;

/**
 * Writes sorted cells as HFiles, inside Spark's executor JVMs (a task of {@link HFileSink}): one
 * HFile per Spark partition and HBase region (a new file starts at every region boundary the partition's keys cross), with the
 * family's compression, data block encoding and bloom filter, the way HFileOutputFormat2's record
 * writer makes them (same StoreFileWriter, same file info), so BulkLoadHFiles hands every file to
 * its region as it is.
 *
 * <p>Cells come sorted by key then qualifier, no two alike, all of one table. Every cell gets the
 * one timestamp of the job.
 *
 * <p>Files are written under {@code dir/_tmp/} with the task attempt in their name and renamed into
 * {@code dir/<family>/} when complete, so a failed or retried attempt never leaves a partial
 * file where BulkLoadHFiles looks. Names are hex digits (HBase's HFile name pattern):
 * 16 of the job tag, 8 of the partition, 8 of the region.
 */
public final class HFileWriter {
  private HFileWriter() {
  }

  static byte[][] parseHex(String joined) {
    if (joined == null || joined.isEmpty()) {
      return new byte[0][];
    }
    String[] parts = joined.split(",");
    byte[][] out = new byte[parts.length][];
    for (int i = 0; i < parts.length; i++) {
      out[i] = Bytes.fromHex(parts[i]);
    }
    return out;
  }

  static final class Writer {
    final Configuration conf;
    final FileSystem fs;
    final Path familyDir;
    final Path tmpDir;
    final byte[] familyBytes;
    final byte[][] splits;
    final long timestamp;
    final long jobTag;
    final int partition;
    final int attempt;
    final HFileContext context;
    final BloomType bloomType;
    final List<String> files = new ArrayList<>();
    StoreFileWriter current;
    Path currentTmp;
    Path currentFinal;
    long cells;
    int region = -1;

    Writer(String dir, String table, String family, String compression, String encoding,
        String bloom, int bloomPrefixLength, int blockSize, byte[][] splits, long timestamp,
        long jobTag, int partition) throws IOException {
      this.conf = HBaseConfiguration.create();
      this.bloomType = BloomType.valueOf(bloom);
      if (bloomType == BloomType.ROWPREFIX_FIXED_LENGTH) {
        conf.set(BloomFilterUtil.PREFIX_LENGTH_KEY, Integer.toString(bloomPrefixLength));
      }
      Path root = new Path(dir);
      this.fs = root.getFileSystem(conf);
      this.familyDir = new Path(root, family);
      TaskContext task = TaskContext.get();
      this.attempt = task == null ? 0 : task.attemptNumber();
      this.tmpDir = new Path(new Path(root.getParent(), "_tmp"), root.getName());
      this.familyBytes = Bytes.toBytes(family);
      this.splits = splits;
      this.timestamp = timestamp;
      this.jobTag = jobTag;
      this.partition = partition;
      HFileContextBuilder builder = new HFileContextBuilder()
          .withCompression(Compression.getCompressionAlgorithmByName(compression.toLowerCase()))
          .withDataBlockEncoding(DataBlockEncoding.valueOf(encoding))
          .withChecksumType(StoreUtils.getChecksumType(conf))
          .withBytesPerCheckSum(StoreUtils.getBytesPerChecksum(conf)).withBlockSize(blockSize)
          .withColumnFamily(familyBytes).withTableName(Bytes.toBytes(table));
      if (HFile.getFormatVersion(conf) >= HFile.MIN_FORMAT_VERSION_WITH_TAGS) {
        builder.withIncludesTags(true);
      }
      this.context = builder.build();
    }

    int regionOf(byte[] key) {
      int r = region < 0 ? 0 : region;
      while (r < splits.length && Bytes.compareTo(key, splits[r]) >= 0) {
        r++;
      }
      return r;
    }

    void append(byte[] key, byte[] qualifier, byte[] value) throws IOException {
      int r = regionOf(key);
      if (r != region || current == null) {
        close();
        open(r);
      }
      current.append(new KeyValue(key, familyBytes, qualifier, timestamp, KeyValue.Type.Put, value));
      cells++;
    }

    void open(int r) throws IOException {
      region = r;
      String name = String.format("%016x%08x%08x", jobTag, partition, r);
      fs.mkdirs(familyDir);
      fs.mkdirs(tmpDir);
      currentFinal = new Path(familyDir, name);
      currentTmp = new Path(tmpDir, name + "_attempt" + attempt);
      current = new StoreFileWriter.Builder(conf, CacheConfig.DISABLED, fs).withFilePath(currentTmp)
          .withBloomType(bloomType).withFileContext(context).build();
      cells = 0;
    }

    void close() throws IOException {
      if (current == null) {
        return;
      }
      current.appendFileInfo(HStoreFile.BULKLOAD_TIME_KEY, Bytes.toBytes(System.currentTimeMillis()));
      current.appendFileInfo(HStoreFile.BULKLOAD_TASK_KEY,
          Bytes.toBytes("dedup-hbase-" + Long.toHexString(jobTag) + "-p" + partition + "-a" + attempt));
      current.appendFileInfo(HStoreFile.MAJOR_COMPACTION_KEY, Bytes.toBytes(true));
      current.appendFileInfo(HStoreFile.EXCLUDE_FROM_MINOR_COMPACTION_KEY, Bytes.toBytes(false));
      current.appendTrackedTimestampsToMetadata();
      current.close();
      current = null;
      if (fs.exists(currentFinal)) {
        fs.delete(currentFinal, false); // left by an earlier attempt of this task
      }
      if (!fs.rename(currentTmp, currentFinal)) {
        throw new IOException("cannot rename " + currentTmp + " to " + currentFinal);
      }
      files.add(currentFinal + "\t" + cells + "\t" + fs.getFileStatus(currentFinal).getLen());
    }

    void finish() throws IOException {
      close();
    }

    void abort() {
      try {
        if (current != null) {
          current.close();
          current = null;
          fs.delete(currentTmp, false);
        }
      } catch (IOException | RuntimeException ignored) {
        // the attempt fails anyway; its temporary file is under _tmp, never loaded
      }
    }
  }
}

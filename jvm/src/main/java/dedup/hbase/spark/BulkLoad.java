package dedup.hbase.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.tool.BulkLoadHFiles;

/**
 * The driver side: BulkLoadHFiles of a folder of HFiles ({@link HFileSink}'s commit), through
 * HBase's ZooKeeper ({@code quorum}: host[,host...]; {@code port}).
 */
public final class BulkLoad {
  private BulkLoad() {
  }

  static Configuration conf(String quorum, int port, String znodeParent) {
    Configuration conf = HBaseConfiguration.create();
    conf.set(HConstants.ZOOKEEPER_QUORUM, quorum);
    conf.setInt(HConstants.ZOOKEEPER_CLIENT_PORT, port);
    if (znodeParent != null && !znodeParent.isEmpty()) {
      conf.set(HConstants.ZOOKEEPER_ZNODE_PARENT, znodeParent);
    }
    return conf;
  }

  /**
   * Hand every HFile under {@code dir/<family>/} to the table's region servers. A file that
   * straddles a region boundary (the table was split or merged since the files were cut) is
   * not split: the load stops ("... fits into no region. And because
   * hbase.loadincremental.fail.if.need.split.hfile was set to true ...") and this returns -1, as
   * it does when the table's regions are seen mid-change (a region's end key not the next one's
   * start: a split not yet finished in hbase:meta; or the table "not currently available": a
   * split's parent closed before its daughters are open, LoadIncrementalHFiles' isTableAvailable
   * check) or a region server refuses a file for a
   * region that split after it was located (WrongRegionException); a rerun cuts the files at the regions of
   * then (loading again a file loaded before the stop is harmless: the same cells, the same
   * timestamps). HBASE-30501: a retried bulk load whose files had been split lost data (fixed in
   * 2.6.8 and 2.5.17; this helper runs with 2.6.4, the newest hbase-shaded-mapreduce -hadoop3
   * build on Maven Central here). {@code copy}: copy the files into HBase and leave them (else
   * they are moved when HBase shares their file system). Returns the number of files loaded.
   * Any other failure is an IOException whose message holds every cause's (the caller may not
   * be able to ask the JVM for them later).
   */
  public static int load(String quorum, int port, String znodeParent, String table, String dir,
      boolean copy) throws IOException {
    Configuration conf = conf(quorum, port, znodeParent);
    conf.setBoolean(BulkLoadHFiles.ALWAYS_COPY_FILES, copy);
    // one load may bring a file per Spark partition to a region: do not refuse many files
    conf.setInt(BulkLoadHFiles.MAX_FILES_PER_REGION_PER_FAMILY, Integer.MAX_VALUE);
    conf.setBoolean(FAIL_IF_NEED_SPLIT, true); // HBASE-27305, in 2.6
    conf.set(BulkLoadHFiles.CREATE_TABLE_CONF_KEY, "no"); // a missing table is an error, not made here
    try {
      Map<BulkLoadHFiles.LoadQueueItem, java.nio.ByteBuffer> loaded =
          BulkLoadHFiles.create(conf).bulkLoad(TableName.valueOf(table), new Path(dir));
      return loaded.size();
    } catch (Exception e) {
      String causes = causes(e);
      if (causes.contains(FAIL_IF_NEED_SPLIT) || causes.contains(REGIONS_MID_CHANGE)
          || causes.contains(REGIONS_OFFLINE) || causes.contains(WRONG_REGION)) {
        return -1;
      }
      throw new IOException("bulk load of " + table + " failed: " + causes, e);
    }
  }

  private static final String FAIL_IF_NEED_SPLIT = "hbase.loadincremental.fail.if.need.split.hfile";
  // BulkLoadHFilesTool.checkRegionIndexValid, while a split or a merge is under way
  private static final String REGIONS_MID_CHANGE = "is not equal to the startkey of the next region";
  // LoadIncrementalHFiles.doBulkLoad when a region is unassigned (a split under way); a table
  // that does not exist is "Table '...' does not exist.", an error
  private static final String REGIONS_OFFLINE = "is not currently available";
  // the region server's refusal of a file sent to a region that split after it was located
  private static final String WRONG_REGION = "WrongRegionException";

  /**
   * Each cause's class and message, outermost first, joined by " <- ", on one line: a message
   * of several lines (HBase's RetriesExhaustedException lists every attempt's error, one per
   * line) gives its first line and its last, the latest attempt's error.
   */
  static String causes(Throwable error) {
    List<String> out = new ArrayList<>();
    for (Throwable t = error; t != null && out.size() < 8; t = t.getCause()) {
      out.add(t.getClass().getSimpleName() + ": " + oneLine(String.valueOf(t.getMessage())));
    }
    return String.join(" <- ", out);
  }

  static String oneLine(String message) {
    String[] lines = message.strip().split("\\R");
    return lines.length == 1 ? lines[0] : lines[0].strip() + " ... " + lines[lines.length - 1].strip();
  }
}

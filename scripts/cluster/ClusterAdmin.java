// HBase admin calls the Thrift gateways do not offer (Thrift2 has no split, no balance), for
// scripts/cluster-local's `admin` command and the fault tests. Run by the Java source launcher
// with the cluster's conf folder and HBase's jars on the class path:
//   ClusterAdmin split TABLE [ROW [FILE]]  ask for a split of TABLE (at ROW, in hex; else at the
//                             midpoint of each region that has data; once FILE exists) and wait
//                             until it has more regions
//   ClusterAdmin balance             run the balancer (retried while regions are in transition) and
//                             wait until no region is in transition
//   ClusterAdmin regions TABLE       print each region's start key (hex) and server
//   ClusterAdmin quiet               switch the balancer off and wait until no region is in
//                             transition: nothing moves until `balancer on` (before the master is
//                             killed: a region the balancer is moving then stays closed until the
//                             master is back)
//   ClusterAdmin balancer on|off     switch the balancer (the switch outlives a master's restart)
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.util.Bytes;

public class ClusterAdmin {
  /** Wait until no region is in transition (until {@code deadline}, ms since the epoch). */
  static void settle(Admin admin, long deadline) throws Exception {
    while (!admin.getClusterMetrics().getRegionStatesInTransition().isEmpty()) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("regions in transition after 120 s");
      Thread.sleep(200);
    }
  }

  public static void main(String[] args) throws Exception {
    Configuration conf = HBaseConfiguration.create();
    long deadline = System.currentTimeMillis() + 120_000;
    try (Connection connection = ConnectionFactory.createConnection(conf);
         Admin admin = connection.getAdmin()) {
      switch (args.length > 0 ? args[0] : "") {
        case "split": {
          TableName table = TableName.valueOf(args[1]);
          int before = admin.getRegions(table).size();
          if (args.length > 3) {  // connected already: split at once when the file appears
            while (!java.nio.file.Files.exists(java.nio.file.Path.of(args[3]))) Thread.sleep(50);
            deadline = System.currentTimeMillis() + 120_000;
          }
          if (args.length > 2) admin.split(table, Bytes.fromHex(args[2]));
          else admin.split(table);
          while (admin.getRegions(table).size() <= before) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no split of " + table + " after 120 s");
            Thread.sleep(200);
          }
          System.out.println(table + ": " + before + " -> " + admin.getRegions(table).size() + " regions");
          break;
        }
        case "balance": {
          admin.balancerSwitch(true, true);
          while (!admin.balance()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("the balancer did not run in 120 s");
            Thread.sleep(500);
          }
          settle(admin, deadline);
          System.out.println("balanced");
          break;
        }
        case "quiet": {
          admin.balancerSwitch(false, true);
          settle(admin, deadline);
          System.out.println("quiet: the balancer off, no region in transition");
          break;
        }
        case "balancer": {
          if (args.length < 2 || !(args[1].equals("on") || args[1].equals("off"))) {
            System.err.println("usage: ClusterAdmin balancer on|off");
            System.exit(2);
          }
          admin.balancerSwitch(args[1].equals("on"), true);
          System.out.println("the balancer " + args[1]);
          break;
        }
        case "regions": {
          try (RegionLocator locator = connection.getRegionLocator(TableName.valueOf(args[1]))) {
            List<HRegionLocation> all = locator.getAllRegionLocations();
            for (HRegionLocation l : all) {
              System.out.println(Bytes.toHex(l.getRegion().getStartKey()) + " " + l.getServerName());
            }
          }
          break;
        }
        default:
          System.err.println("usage: ClusterAdmin split TABLE [ROW [FILE]] | balance | quiet | balancer on|off | regions TABLE");
          System.exit(2);
      }
    }
  }
}

// SPDX-License-Identifier: Apache-2.0
// Trains y = w * x + b on each rank's own shard of a synthetic data set (y = 3x + 2 plus a
// little noise), averaging the gradients over all ranks with one grouped allreduce per step,
// as data-parallel training does; every rank prints the loss over the whole data set (the
// average of the ranks' losses), so all ranks print the same numbers.
//
//   hvdrun -np 2 java -cp /usr/share/java/libhvd.jar LinearModel.java [steps]
// (from a build tree: -cp build/bindings/java/libhvd-<version>.jar:/usr/share/java/jna.jar
//  and -Djna.library.path=build/src)

import java.util.Random;
import org.libhvd.Hvd;
import org.libhvd.OpOptions;
import org.libhvd.ReduceOp;
import org.libhvd.Tensor;

public final class LinearModel {
    private static final int SAMPLES_PER_RANK = 256;

    public static void main(String[] args) {
        int steps = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        try (Hvd hvd = Hvd.init()) {
            int rank = hvd.rank();
            Random random = new Random(1234 + rank);
            double[] xs = new double[SAMPLES_PER_RANK];
            double[] ys = new double[SAMPLES_PER_RANK];
            for (int i = 0; i < xs.length; i++) {
                xs[i] = random.nextDouble() * 2 - 1;
                ys[i] = 3 * xs[i] + 2 + 0.01 * random.nextGaussian();
            }
            // the model starts from rank 0's random values on every rank
            double[] model = hvd.broadcast(new double[] {random.nextGaussian(), random.nextGaussian()}, 0);
            double rate = 0.5;
            for (int step = 1; step <= steps; step++) {
                double gw = 0;
                double gb = 0;
                double loss = 0;
                for (int i = 0; i < xs.length; i++) {
                    double err = model[0] * xs[i] + model[1] - ys[i];
                    loss += err * err;
                    gw += 2 * err * xs[i];
                    gb += 2 * err;
                }
                Tensor grads = Tensor.copyOf(new double[] {gw / xs.length, gb / xs.length});
                Tensor losses = Tensor.copyOf(new double[] {loss / xs.length});
                hvd.groupedAllreduce(new Tensor[] {grads, losses}, OpOptions.named("step").op(ReduceOp.AVERAGE));
                double[] g = grads.toDoubleArray();
                model[0] -= rate * g[0];
                model[1] -= rate * g[1];
                System.out.printf("step %d loss %.9f%n", step, losses.toDoubleArray()[0]);
            }
            System.out.printf("rank %d of %d: w %.4f b %.4f%n", rank, hvd.size(), model[0], model[1]);
        }
    }
}

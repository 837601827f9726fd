package localcluster_test

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

type batchJob struct {
	ns, name string
	spec     corev1.PodSpec
}

func (j *batchJob) create(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.BatchV1().Jobs(j.ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.name},
		Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: j.spec}},
	}, metav1.CreateOptions{})
	return err
}

func (j *batchJob) succeeded(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	got, err := cs.BatchV1().Jobs(j.ns).Get(ctx, j.name, metav1.GetOptions{})
	if err != nil {
		return false, nil
	}
	for _, c := range got.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return got.Status.Succeeded == 1, nil
		}
	}
	return false, nil
}

type cronJob struct {
	ns, name string
	spec     corev1.PodSpec
}

func (c *cronJob) create(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.BatchV1().CronJobs(c.ns).Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: c.name},
		Spec: batchv1.CronJobSpec{
			Schedule:    "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: c.spec}}},
		},
	}, metav1.CreateOptions{})
	return err
}

func (c *cronJob) hasJobs(ctx context.Context, cs kubernetes.Interface) (bool, error) {
	jobs, err := cs.BatchV1().Jobs(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, nil
	}
	for _, j := range jobs.Items {
		for _, o := range j.OwnerReferences {
			if o.Kind == "CronJob" && o.Name == c.name {
				return true, nil
			}
		}
	}
	return false, nil
}
